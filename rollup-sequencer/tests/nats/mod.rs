//! A real NATS server with JetStream for the job-queue tests (Debian's `nats-server`, installed
//! by `make test` through scripts/setup-nats.sh). Shared by the sequencer's tests and the
//! end-to-end test (included there by path).
// Each including test uses a different subset.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn nats_server() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("nats-server")).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin/nats-server"), PathBuf::from("/usr/bin/nats-server")])
        .find(|p| p.is_file())
        .expect("nats-server is not installed: `make test` installs it (scripts/setup-nats.sh)")
}

/// A broker with JetStream storing under its store directory, on a free loopback port; killed
/// (SIGKILL) on drop.
pub struct Broker {
    child: Child,
    /// `nats://127.0.0.1:<port>`.
    pub url: String,
    port: u16,
}

impl Broker {
    /// Starts a broker storing under `store` on a free port.
    pub fn start(store: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Self::start_on(port, store)
    }

    /// Starts a broker storing under `store` on a free port that admits only `user` with
    /// `password`.
    pub fn start_with_password(store: &Path, user: &str, password: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Self::spawn(port, store, &["--user", user, "--pass", password])
    }

    /// Starts a broker on `port` (a restart of an earlier one uses its port and store).
    pub fn start_on(port: u16, store: &Path) -> Self {
        Self::spawn(port, store, &[])
    }

    fn spawn(port: u16, store: &Path, extra: &[&str]) -> Self {
        let child = Command::new(nats_server())
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "nats-server did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, url: format!("nats://127.0.0.1:{port}"), port }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
