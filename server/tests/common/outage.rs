//! A database outage a test or benchmark controls: a TCP proxy in front of
//! the PostgreSQL server that can be cut and restored.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// A TCP proxy in front of the database's server that the test can cut:
/// every connection through it is dropped and new ones are refused until
/// it is restored, as when the server stops or the network fails.
pub struct Outage {
    pub addr: std::net::SocketAddr,
    cut: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<AbortHandle>>>,
}

impl Outage {
    pub async fn in_front_of(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (cut_, live_) = (cut.clone(), live.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if cut_.load(Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let upstream = upstream.clone();
                let relay = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                live_.lock().unwrap().push(relay.abort_handle());
            }
        });
        Self { addr, cut, live }
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for relay in self.live.lock().unwrap().drain(..) {
            relay.abort();
        }
    }

    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}
