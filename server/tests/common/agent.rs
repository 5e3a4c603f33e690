//! An agent for the MCP door: rmcp's client over streamable HTTP with an
//! API token, and the calls tests make with it.

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::TestServer;

pub async fn agent(server: &TestServer, token: &str) -> RunningService<RoleClient, ()> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.at("/mcp")).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the agent connects")
}

pub async fn token(server: &TestServer, email: &str, workspace: &str) -> String {
    server
        .state
        .engine
        .create_token(email, workspace)
        .await
        .unwrap()
        .1
}

pub async fn tool_names(agent: &RunningService<RoleClient, ()>) -> Vec<String> {
    agent
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

pub async fn call(
    agent: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    agent
        .call_tool(
            CallToolRequestParams::new(name.to_owned()).with_arguments(JsonObject::from(args)),
        )
        .await
        .expect("the tool answers")
}

pub fn answer(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .clone()
        .expect("a structured answer")
}
