//! How the browser reads the server's JSON. A server function's answer
//! arrives as bytes and server_fn reads it with `serde_json::from_slice`;
//! resources and the live stream read text. Reading text the same way (its
//! bytes through `from_slice`) keeps one deserializer per wire type in the
//! bundle instead of two (`serde_json`'s `StrRead` and `SliceRead` each
//! instantiate the whole parser for every type they read).

use leptos::prelude::*;
use leptos::server::codee::{Decoder, Encoder};
use serde::{de::DeserializeOwned, Serialize};

/// The codec every resource uses: JSON written as text, read as bytes.
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        read(text)
    }
}

/// Reads one value from JSON text, the way a server function's answer is read.
pub fn read<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_slice(text.as_bytes())
}

/// A resource read through [`Json`]: `Resource::new`, with the one reading.
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, Json>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: PartialEq + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let value = vec![(1_i64, "a \"quoted\" é".to_owned())];
        let text = <Json as Encoder<_>>::encode(&value).unwrap();
        let back: Vec<(i64, String)> = <Json as Decoder<_>>::decode(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn bad_text_is_an_error_not_a_value() {
        assert!(read::<Vec<i64>>("[1, 2").is_err());
    }
}
