//! A scripted HTTP/1.1 server on 127.0.0.1 for the provider tests: each accepted connection
//! plays the next scripted reply (a list of [`Step`]s) and every complete request is recorded.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One thing the server does on a connection.
#[derive(Clone)]
pub enum Step {
    /// Write bytes (one TCP write).
    Write(Vec<u8>),
    /// Wait before the next step.
    Pause(Duration),
    /// Close with a TCP RST (linger 0) instead of a FIN.
    Reset,
    /// Reset the connection without reading the request (only as the first step).
    ResetAtOnce,
    /// Write these bytes again and again until the peer goes away (an endless reply).
    Forever(Vec<u8>),
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub head: String,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// How the server behaves beyond its script.
#[derive(Clone)]
pub struct Options {
    /// Played once the scripted replies are used up (empty: close at once).
    pub fallback: Vec<Step>,
    /// Pause after every write, so consecutive writes arrive as separate TCP segments.
    pub write_gap: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fallback: status(599, "no more scripted replies", &[]),
            write_gap: Duration::ZERO,
        }
    }
}

pub struct Server {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    connections: Arc<Mutex<usize>>,
}

impl Server {
    /// A server playing `replies` in order, then a 599 error for any further connection.
    pub async fn start(replies: Vec<Vec<Step>>) -> Server {
        Self::start_with(replies, Options::default()).await
    }

    pub async fn start_with(replies: Vec<Vec<Step>>, options: Options) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (recorded, counter) = (Arc::clone(&requests), Arc::clone(&connections));
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                *counter.lock().unwrap() += 1;
                let reply = queue.lock().unwrap().pop_front();
                let reply = reply.unwrap_or_else(|| options.fallback.clone());
                let recorded = Arc::clone(&recorded);
                tokio::spawn(play(socket, reply, recorded, options.write_gap));
            }
        });
        Server {
            base_url: format!("http://{addr}/v1"),
            requests,
            connections,
        }
    }

    /// Every complete request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Connections accepted so far (including ones reset before a request was read).
    pub fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }
}

async fn play(
    mut socket: TcpStream,
    reply: Vec<Step>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    write_gap: Duration,
) {
    if !matches!(reply.first(), Some(Step::ResetAtOnce)) {
        match read_request(&mut socket).await {
            Some(request) => recorded.lock().unwrap().push(request),
            None => return,
        }
    }
    for step in reply {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
                if !write_gap.is_zero() {
                    tokio::time::sleep(write_gap).await;
                }
            }
            Step::Pause(d) => tokio::time::sleep(d).await,
            Step::Forever(bytes) => loop {
                if socket.write_all(&bytes).await.is_err() {
                    return;
                }
                if !write_gap.is_zero() {
                    tokio::time::sleep(write_gap).await;
                }
            },
            Step::Reset | Step::ResetAtOnce => {
                let _ = socket.set_zero_linger();
                return;
            }
        }
    }
    // Dropping the socket closes the connection (abruptly, if the reply was unfinished).
}

/// The request head and its `content-length` body, or `None` if the peer went away first.
async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    Some(Recorded { head, body })
}

/// A complete non-streamed reply with a JSON `body` and extra `headers`.
pub fn status(code: u16, body: &str, headers: &[(&str, &str)]) -> Vec<Step> {
    let mut head = format!(
        "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (n, v) in headers {
        let _ = write!(head, "{n}: {v}\r\n");
    }
    head.push_str("\r\n");
    head.push_str(body);
    vec![Step::Write(head.into_bytes())]
}

/// Headers of a chunked event-stream reply.
pub fn stream_head() -> Step {
    Step::Write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            .to_vec(),
    )
}

/// One HTTP chunk carrying `data` (one TCP write).
pub fn chunk(data: &[u8]) -> Step {
    Step::Write(chunk_bytes(data))
}

/// The bytes of one HTTP chunk carrying `data`.
pub fn chunk_bytes(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The end of a chunked body.
pub fn end() -> Step {
    Step::Write(b"0\r\n\r\n".to_vec())
}

/// One SSE event carrying a content delta.
pub fn delta(content: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
    )
}
