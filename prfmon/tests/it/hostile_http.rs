//! A hostile `prfmon serve` stand-in: an HTTP/1.1 server on a thread of the test process,
//! listening on 127.0.0.1:0, that answers each request with whatever bytes the test hands it
//! (a huge PERF_DATA_BLOCK, a redirect, a body cut short, control characters), and a crafted
//! PERF_DATA_BLOCK with many instances.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prfdata_wire::winperf::{
    PerfCounterBlock, PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType, I32, I64,
    PERF_COUNTER_RAWCOUNT, PERF_DETAIL_NOVICE, PERF_NO_UNIQUE_ID, U32,
};
use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
use zerocopy::IntoBytes;

/// How long the server waits on one connection (reading a request, writing an answer).
const IO_WAIT: Duration = Duration::from_secs(30);

/// One answer: the head (status line and headers, without the blank line) and the body
/// bytes sent after it; the connection closes after them.
#[derive(Clone)]
pub struct Reply {
    /// `HTTP/1.1 200 OK\r\nContent-Length: 5` and so on, lines joined by `\r\n`.
    pub head: String,
    /// What follows the blank line.
    pub body: Arc<Vec<u8>>,
}

impl Reply {
    /// `status` with `body` and its true `Content-Length`, plus `headers` (`Name: value`).
    pub fn new(status: &str, headers: &[String], body: Vec<u8>) -> Self {
        let mut head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close",
            body.len()
        );
        for h in headers {
            head.push_str("\r\n");
            head.push_str(h);
        }
        Self {
            head,
            body: Arc::new(body),
        }
    }

    /// `200 OK` with a JSON body.
    pub fn json(text: &str) -> Self {
        Self::new(
            "200 OK",
            &["Content-Type: application/json".into()],
            text.as_bytes().to_vec(),
        )
    }

    /// `status` with a plain-text body.
    pub fn text(status: &str, text: &[u8]) -> Self {
        Self::new(
            status,
            &["Content-Type: text/plain; charset=utf-8".into()],
            text.to_vec(),
        )
    }

    /// `200 OK` with a PERF_DATA_BLOCK whose objects all come from `service`.
    pub fn perfdata(block: Arc<Vec<u8>>, objects: usize, service: &str) -> Self {
        let services = vec![service; objects].join(",");
        Self {
            head: format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\
                 Prfmon-Services: {services}\r\nConnection: close",
                block.len()
            ),
            body: block,
        }
    }
}

/// The request line's target (`/perfdata?query=Global`), what the handler answers.
pub type Handler = dyn Fn(&str) -> Reply + Send + Sync;

/// The server; stopped (its thread joined) when dropped.
pub struct HostileServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HostileServer {
    /// Starts answering every request with `handler(target)`.
    pub fn start(handler: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("non-blocking accept");
        let addr = listener.local_addr().expect("the bound address");
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || serve(&listener, &stopping, &handler));
        Self {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(listener: &TcpListener, stop: &AtomicBool, handler: &Handler) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = answer(stream, handler);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Reads one request head and writes the handler's reply.
fn answer(mut stream: TcpStream, handler: &Handler) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_WAIT))?;
    stream.set_write_timeout(Some(IO_WAIT))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    let end = Instant::now() + IO_WAIT;
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 && Instant::now() < end {
        if stream.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let reply = handler(&target);
    stream.write_all(reply.head.as_bytes())?;
    stream.write_all(b"\r\n\r\n")?;
    stream.write_all(&reply.body)?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // Let the client read everything before the socket closes (a close with unread input
    // would reset the connection).
    let mut sink = [0u8; 1024];
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

/// The object index of [`many_instances`]' object and its counter's (`index + 2`).
pub const HUGE_OBJECT: u32 = 2000;

/// A PERF_DATA_BLOCK holding one object (name index [`HUGE_OBJECT`], one RAWCOUNT counter)
/// with `count` instances, each with its own name (hexadecimal), and a value of its
/// position: the smallest bytes per instance a decoder must accept (48).
pub fn many_instances(count: u32) -> Vec<u8> {
    let def = PerfCounterDefinition {
        byte_length: U32::new(40),
        counter_name_title_index: U32::new(HUGE_OBJECT + 2),
        counter_help_title_index: U32::new(HUGE_OBJECT + 3),
        detail_level: U32::new(PERF_DETAIL_NOVICE),
        counter_type: U32::new(PERF_COUNTER_RAWCOUNT),
        counter_size: U32::new(4),
        counter_offset: U32::new(4),
        ..Default::default()
    };
    let mut body = Vec::with_capacity(count as usize * 48);
    for i in 0..count {
        let units: Vec<u16> = format!("{i:x}").encode_utf16().chain([0]).collect();
        let name_bytes = units.len() * 2;
        let len = (24 + name_bytes).next_multiple_of(8);
        let inst = PerfInstanceDefinition {
            byte_length: U32::new(len as u32),
            parent_object_title_index: U32::new(0),
            parent_object_instance: U32::new(0),
            unique_id: I32::new(PERF_NO_UNIQUE_ID),
            name_offset: U32::new(24),
            name_length: U32::new(name_bytes as u32),
        };
        body.extend_from_slice(inst.as_bytes());
        body.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        body.resize(body.len().next_multiple_of(8), 0);
        body.extend_from_slice(
            PerfCounterBlock {
                byte_length: U32::new(8),
            }
            .as_bytes(),
        );
        body.extend_from_slice(&i.to_le_bytes());
    }
    let definition_length = 64 + 40;
    let header = PerfObjectType {
        total_byte_length: U32::new((definition_length + body.len()) as u32),
        definition_length: U32::new(definition_length as u32),
        header_length: U32::new(64),
        object_name_title_index: U32::new(HUGE_OBJECT),
        object_help_title_index: U32::new(HUGE_OBJECT + 1),
        detail_level: U32::new(PERF_DETAIL_NOVICE),
        num_counters: U32::new(1),
        default_counter: I32::new(0),
        num_instances: I32::new(count as i32),
        perf_time: I64::new(1),
        perf_freq: I64::new(1),
        ..Default::default()
    };
    let mut object = header.as_bytes().to_vec();
    object.extend_from_slice(def.as_bytes());
    object.extend_from_slice(&body);
    drop(body);
    let out = ProviderOutput {
        bytes: object,
        num_objects: 1,
    };
    build_data_block("hostile", &CollectionTimes::now(), &[out])
}

/// The `/names` JSON that names [`many_instances`]' object and counter.
pub fn huge_names() -> String {
    format!(
        r#"{{"counter":{{"{o}":"Huge","{c}":"Value"}},"help":{{"{h}":"Many instances.","{ch}":"A value."}}}}"#,
        o = HUGE_OBJECT,
        c = HUGE_OBJECT + 2,
        h = HUGE_OBJECT + 1,
        ch = HUGE_OBJECT + 3
    )
}
