//! A lab of hosts in network namespaces for the fleet tests and benchmark: a bridge in a
//! "lab" namespace, N hosts (each its own namespace, joined to the bridge by a veth pair,
//! address 10.77.N.i) running a brownout relay (`proxy http` in front of `brownout
//! fixture`, its admin API on the host's address behind a token), and a runner namespace
//! (10.77.N.100, N the lab's own) with its own `/etc/hosts` (`ip netns exec` bind-mounts
//! `/etc/netns/NAME/hosts` over `/etc/hosts`), so DNS discovery is tested without
//! touching the machine's.
//!
//! Names are unique per process and lab (`bof<pid>x<n>…`); the lab's Drop kills what runs
//! in its namespaces and deletes them, and a new lab first removes what a crashed run left
//! (namespaces whose process is gone). Where namespaces cannot be made (not root, no `ip`),
//! [`Lab::new`] says so on stderr and returns `None`: the test is skipped, never silently.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "fleet-lab-token";
pub const MCP_PORT: u16 = 8900;
pub const ADMIN_PORT: u16 = 9901;
const PREFIX: &str = "bof";

static LABS: AtomicUsize = AtomicUsize::new(0);

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn must(args: &[&str]) {
    if let Err(e) = ip(args) {
        panic!("{e}");
    }
}

/// Kill every process in namespace `ns`, then delete it.
fn delete_ns(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(p) = pid.parse::<i32>() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    let _ = ip(&["netns", "del", ns]);
    let _ = std::fs::remove_dir_all(format!("/etc/netns/{ns}"));
}

/// Remove the namespaces of labs whose test process is gone (a crashed run).
fn clean_leftovers() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid: Option<i32> = rest.split('x').next().and_then(|p| p.parse().ok());
        if let Some(pid) = pid {
            let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
            if !alive {
                delete_ns(name);
            }
        }
    }
}

/// Whether network namespaces can be made here; why not, if not.
fn can_make_namespaces() -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("id: {e}"))?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Err("not root".into());
    }
    let probe = format!(
        "{PREFIX}{}xprobe{}",
        std::process::id(),
        LABS.fetch_add(1, Ordering::SeqCst)
    );
    ip(&["netns", "add", &probe]).map_err(|e| format!("`ip netns add` fails: {e}"))?;
    delete_ns(&probe);
    Ok(())
}

/// One host: its namespace, its address, its relay.
pub struct Host {
    pub ns: String,
    pub addr: String,
    /// The veth end on the bridge (down: the host is cut off).
    pub bridge_end: String,
    relay: Option<Child>,
}

impl Host {
    pub fn admin(&self) -> String {
        format!("http://{}:{ADMIN_PORT}", self.addr)
    }

    pub fn url(&self) -> String {
        format!("http://{}:{MCP_PORT}/mcp", self.addr)
    }
}

pub struct Lab {
    pub lab: String,
    pub runner: String,
    pub hosts: Vec<Host>,
}

impl Lab {
    /// A lab of `n` hosts, each running a relay, and a runner namespace; `None` (said on
    /// stderr) where namespaces cannot be made.
    pub fn new(n: usize, brownout: &str) -> Option<Lab> {
        if let Err(why) = can_make_namespaces() {
            eprintln!(
                "SKIPPED: the fleet tests need network namespaces (`ip netns`, as root): {why}"
            );
            return None;
        }
        clean_leftovers();
        let n_lab = LABS.fetch_add(1, Ordering::SeqCst);
        let id = format!("{PREFIX}{}x{n_lab}", std::process::id());
        // A subnet of its own: runs hold a lock per target (its addresses), so two labs
        // must not look like one target.
        let net = format!(
            "10.77.{}",
            (std::process::id() as usize * 7 + n_lab) % 250 + 1
        );
        let lab = format!("{id}l");
        let runner = format!("{id}r");
        let mut me = Lab {
            lab: lab.clone(),
            runner: runner.clone(),
            hosts: Vec::new(),
        };
        must(&["netns", "add", &lab]);
        must(&["-n", &lab, "link", "set", "lo", "up"]);
        must(&["-n", &lab, "link", "add", "br0", "type", "bridge"]);
        must(&[
            "-n",
            &lab,
            "addr",
            "add",
            &format!("{net}.254/24"),
            "dev",
            "br0",
        ]);
        must(&["-n", &lab, "link", "set", "br0", "up"]);
        me.join(&runner, &format!("{net}.100"), "vr");
        for i in 1..=n {
            let ns = format!("{id}h{i}");
            let addr = format!("{net}.{i}");
            let bridge_end = me.join(&ns, &addr, &format!("v{i}"));
            me.hosts.push(Host {
                ns,
                addr,
                bridge_end,
                relay: None,
            });
        }
        for i in 0..n {
            let h = &me.hosts[i];
            let child = Command::new("ip")
                .args(["netns", "exec", &h.ns, brownout, "proxy", "http", "--quiet"])
                .args([
                    "--listen",
                    &format!("{}:{MCP_PORT}", h.addr),
                    "--allow-remote",
                ])
                .args(["--admin", &format!("{}:{ADMIN_PORT}", h.addr)])
                .args(["--admin-token", TOKEN, "--", brownout, "fixture"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start a relay");
            me.hosts[i].relay = Some(child);
        }
        me.wait_ready(brownout);
        me.warm(brownout);
        Some(me)
    }

    /// Add and remove a fault on every relay: a relay's first fault costs it the most (its
    /// plan checks warm up), and on a busy debug build that first one can take seconds —
    /// the tests and the benchmark are about what comes after.
    fn warm(&self, brownout: &str) {
        for h in &self.hosts {
            let admin = h.admin();
            for args in [
                vec![
                    "add",
                    "--ttl",
                    "10s",
                    "{id: warm-up, kind: latency, added_ms: 1}",
                ],
                vec!["rm", "warm-up"],
            ] {
                let out = std::process::Command::new("ip")
                    .args(["netns", "exec", &self.lab, brownout, "faults"])
                    .args(&args)
                    .args(["--admin", &admin, "--token", TOKEN])
                    .output()
                    .expect("faults add/rm");
                assert!(
                    out.status.success(),
                    "warming {admin}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }

    /// Create namespace `ns` (unless it is the runner's, made here too) joined to the
    /// bridge at `addr`; the bridge end's name.
    fn join(&mut self, ns: &str, addr: &str, tag: &str) -> String {
        must(&["netns", "add", ns]);
        must(&["-n", ns, "link", "set", "lo", "up"]);
        let (inside, outside) = (format!("e{tag}"), format!("b{tag}"));
        must(&[
            "-n", &self.lab, "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            "netns", ns,
        ]);
        must(&["-n", &self.lab, "link", "set", &outside, "master", "br0"]);
        must(&["-n", &self.lab, "link", "set", &outside, "up"]);
        must(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            &inside,
        ]);
        must(&["-n", ns, "link", "set", &inside, "up"]);
        outside
    }

    /// Wait (bounded) until every relay's admin API answers from the lab.
    fn wait_ready(&self, brownout: &str) {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            if self.list(brownout).0 == 0 {
                return;
            }
            assert!(Instant::now() < until, "the relays did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `brownout faults list --fleet EVERY-RELAY --json`, run in the lab (the bridge's
    /// side, which sees every host): its exit code and answer.
    pub fn list(&self, brownout: &str) -> (i32, serde_json::Value) {
        self.list_of(brownout, &(0..self.hosts.len()).collect::<Vec<_>>())
    }

    /// [`Lab::list`] of the hosts `only` (a host cut off would hold a listing up for its
    /// timeout).
    pub fn list_of(&self, brownout: &str, only: &[usize]) -> (i32, serde_json::Value) {
        let fleet: Vec<String> = only.iter().map(|&i| self.hosts[i].admin()).collect();
        let out = Command::new("ip")
            .args([
                "netns", "exec", &self.lab, brownout, "faults", "list", "--json",
            ])
            .args(["--fleet", &fleet.join(","), "--token", TOKEN])
            .output()
            .expect("run faults list");
        let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        (out.status.code().unwrap_or(-1), v)
    }

    /// The fault ids on each host's relay, as it lists them (`None`: not reached).
    pub fn faults(&self, brownout: &str) -> Vec<Option<Vec<String>>> {
        self.faults_of(brownout, &(0..self.hosts.len()).collect::<Vec<_>>())
    }

    /// Host by host, the fault ids of the hosts `only` (`None` for the others).
    pub fn faults_of(&self, brownout: &str, only: &[usize]) -> Vec<Option<Vec<String>>> {
        let (_, v) = self.list_of(brownout, only);
        self.hosts
            .iter()
            .map(|h| {
                let r = v["relays"]
                    .as_array()?
                    .iter()
                    .find(|r| r["admin"] == h.admin().as_str())?;
                if r["reachable"] != true {
                    return None;
                }
                Some(
                    r["faults"]
                        .as_array()?
                        .iter()
                        .filter_map(|f| f["id"].as_str().map(str::to_string))
                        .collect(),
                )
            })
            .collect()
    }

    /// One host's faults, asked from inside that host (reachable while it is cut off).
    pub fn faults_inside(&self, i: usize, brownout: &str) -> Option<Vec<String>> {
        let h = &self.hosts[i];
        let out = Command::new("ip")
            .args(["netns", "exec", &h.ns, brownout, "faults", "list", "--json"])
            .args(["--admin", &h.admin(), "--token", TOKEN])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(
            v["faults"]
                .as_array()?
                .iter()
                .filter_map(|f| f["id"].as_str().map(str::to_string))
                .collect(),
        )
    }

    /// One relay's `/status` `summary`, asked from the lab.
    /// Relay `i`'s status (`brownout faults status --json`, from the lab's namespace).
    fn status(&self, i: usize, brownout: &str) -> serde_json::Value {
        let out = Command::new("ip")
            .args([
                "netns", "exec", &self.lab, brownout, "faults", "status", "--json",
            ])
            .args(["--admin", &self.hosts[i].admin(), "--token", TOKEN])
            .output()
            .expect("faults status");
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    /// The calls of `tool` relay `i` carried, as its status counts them.
    pub fn tool_calls(&self, i: usize, brownout: &str, tool: &str) -> u64 {
        self.status(i, brownout)["summary"]["tools"][tool]["calls"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Every call relay `i` carried.
    pub fn calls(&self, i: usize, brownout: &str) -> u64 {
        self.status(i, brownout)["summary"]["tools"]
            .as_object()
            .map_or(0, |t| t.values().filter_map(|x| x["calls"].as_u64()).sum())
    }

    /// Cut host `i` off the bridge (`up: false`) or put it back.
    pub fn link(&self, i: usize, up: bool) {
        let state = if up { "up" } else { "down" };
        must(&[
            "-n",
            &self.lab,
            "link",
            "set",
            &self.hosts[i].bridge_end,
            state,
        ]);
    }

    /// The runner namespace's `/etc/hosts` (written in place: the bind mount `ip netns
    /// exec` made follows the file, not its name).
    pub fn hosts_file(&self, lines: &str) -> PathBuf {
        let dir = PathBuf::from(format!("/etc/netns/{}", self.runner));
        std::fs::create_dir_all(&dir).expect("/etc/netns dir");
        let p = dir.join("hosts");
        let text = format!("127.0.0.1 localhost\n{lines}");
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&p)
            .expect("open hosts");
        f.write_all(text.as_bytes()).expect("write hosts");
        p
    }

    /// A command run in the runner's namespace.
    pub fn in_runner(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.runner, program]);
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            if let Some(mut c) = h.relay.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for h in &self.hosts {
            delete_ns(&h.ns);
        }
        delete_ns(&self.runner);
        delete_ns(&self.lab);
    }
}
