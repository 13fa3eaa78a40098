//! Deployment: deploy/kubernetes/ validated against the Kubernetes 1.30 schemas
//! (`kubernetes-validate`, strict), the sidecar started with the exact arguments, probe and
//! Secret of the manifests in front of a real server with the runner Job's command run
//! against it, and the static binary (scripts/build-static) running alone — no libc, no
//! file, no environment — in an empty root, as in the FROM-scratch image.

mod common;

use common::http::{free_port, py_http, spawn, wait_port, Guard};
use common::{brownout, python, repo, tmp};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Kubernetes version the manifests are checked against.
const KUBERNETES: &str = "1.30.0";

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy/kubernetes"))
        .expect("deploy/kubernetes")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

/// A YAML text as JSON (PyYAML from the test venv).
fn serde_yaml_value(text: &str) -> Value {
    let out = Command::new(python())
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().expect("stdin").write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .expect("python");
    serde_json::from_slice(&out.stdout).expect("json")
}

fn venv_tool(name: &str) -> PathBuf {
    let py = PathBuf::from(python());
    py.parent().expect("venv bin").join(name)
}

fn validate(files: &[PathBuf]) -> Output {
    Command::new(venv_tool("kubernetes-validate"))
        .args(["-k", KUBERNETES, "--strict", "--quiet"])
        .args(files)
        .output()
        .expect("run kubernetes-validate (scripts/setup-peers installs it)")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A manifest's documents as JSON (PyYAML from the test venv).
fn docs(name: &str) -> Vec<Value> {
    let out = Command::new(python())
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(repo().join("deploy/kubernetes").join(name))
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn the_manifests_are_valid_kubernetes_objects_and_a_broken_one_is_not() {
    let files = manifests();
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .collect();
    for want in [
        "deployment.yaml",
        "service.yaml",
        "service-headless.yaml",
        "secret.yaml",
        "runner-job.yaml",
        "experiment-configmap.yaml",
        "networkpolicy.yaml",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    let out = validate(&files);
    assert!(out.status.success(), "{}", text(&out));
    // The validator does reject: a wrong type, and (strict) a field Kubernetes does not know.
    let dir = tmp();
    let good =
        std::fs::read_to_string(repo().join("deploy/kubernetes/deployment.yaml")).expect("read");
    for (what, bad) in [
        (
            "a string replica count",
            good.replace("replicas: 3", "replicas: three"),
        ),
        (
            "an unknown container field",
            good.replace("          resources:", "          resourcez:"),
        ),
    ] {
        assert_ne!(bad, good, "{what}: the mutation applies");
        let f = dir.path().join("bad.yaml");
        std::fs::write(&f, bad).expect("write");
        let out = validate(&[f]);
        assert!(!out.status.success(), "{what} passed: {}", text(&out));
    }
}

fn container<'a>(pod_spec: &'a Value, name: &str) -> &'a Value {
    pod_spec["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("container {name}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|a| a.as_str().expect("string").to_string())
        .collect()
}

/// An admin API beyond loopback: the NetworkPolicy selects the Deployment's pods and lets
/// only pods with the runner Job's labels reach the admin port; the MCP port stays open.
fn admin_only_from_the_runner(deployment: &Value, relay: &Value, admin_at: &str) {
    let policy = &docs("networkpolicy.yaml")[0];
    let job = &docs("runner-job.yaml")[0];
    let port = admin_at
        .rsplit_once(':')
        .map(|(_, p)| p)
        .expect("admin port");
    let admin = relay["ports"]
        .as_array()
        .and_then(|ps| {
            ps.iter().find(|p| {
                p["containerPort"]
                    .as_u64()
                    .map(|n| n.to_string())
                    .as_deref()
                    == Some(port)
            })
        })
        .unwrap_or_else(|| panic!("a container port for the admin API {admin_at}"));
    let pods = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .expect("podSelector")
    {
        assert_eq!(&pods[k], v, "the policy selects the relay's pods: {k}");
    }
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let runner = &job["spec"]["template"]["metadata"]["labels"];
    let rules = policy["spec"]["ingress"].as_array().expect("ingress");
    let mut admin_rules = 0;
    for rule in rules {
        let names: Vec<&Value> = rule["ports"]
            .as_array()
            .map(|ps| ps.iter().map(|p| &p["port"]).collect())
            .unwrap_or_default();
        assert!(
            !names.is_empty(),
            "a rule without ports opens every port: {rule}"
        );
        if names.contains(&&admin["name"]) {
            admin_rules += 1;
            let from = rule["from"].as_array().expect("admin: from whom");
            assert_eq!(from.len(), 1, "{rule}");
            let sel = from[0]["podSelector"]["matchLabels"]
                .as_object()
                .expect("admin: a pod selector");
            assert!(
                !sel.is_empty() && from[0]["namespaceSelector"].is_null(),
                "{rule}"
            );
            for (k, v) in sel {
                assert_eq!(&runner[k], v, "the runner Job's pods match: {k}");
            }
            let others: Vec<&Value> = pods
                .as_object()
                .map(|m| m.values().collect())
                .unwrap_or_default();
            assert!(
                sel.iter()
                    .any(|(k, v)| pods[k] != *v || !others.contains(&v)),
                "the relay's own pods are not the ones let in: {rule}"
            );
        }
    }
    assert_eq!(admin_rules, 1, "one rule for the admin port: {rules:?}");
}

/// The manifests' ports, remapped to free ones (and 0.0.0.0 to loopback: the test sends
/// traffic only there); every other argument exactly as written.
struct Ports(Vec<(String, String)>);

impl Ports {
    fn new() -> Ports {
        let p = |from: &str, to: String| (from.to_string(), to);
        let admin = free_port();
        Ports(vec![
            p("127.0.0.1:3001", format!("127.0.0.1:{}", free_port())),
            p("0.0.0.0:8900", format!("127.0.0.1:{}", free_port())),
            p("0.0.0.0:9901", format!("127.0.0.1:{admin}")),
            // The probes reach the same admin API on the pod's loopback.
            p("127.0.0.1:9901", format!("127.0.0.1:{admin}")),
        ])
    }
    fn map(&self, args: &[String]) -> Vec<String> {
        args.iter()
            .map(|a| {
                self.0
                    .iter()
                    .fold(a.clone(), |a, (from, to)| a.replace(from.as_str(), to))
            })
            .collect()
    }
    fn port(&self, k: usize) -> u16 {
        let a = &self.0[k].1;
        a.rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .expect("port")
    }
}

/// The image's `/brownout` is this build's binary.
fn exe(cmd: &[String]) -> Command {
    let mut c = Command::new(brownout());
    let args = if cmd.first().is_some_and(|c| c == "/brownout") {
        &cmd[1..]
    } else {
        cmd
    };
    c.args(args);
    c
}

#[test]
fn the_sidecar_runs_with_the_manifests_args_probe_and_secret_and_the_job_runs_against_it() {
    let deployment = &docs("deployment.yaml")[0];
    let secret = &docs("secret.yaml")[0];
    let service = &docs("service.yaml")[0];
    let headless = &docs("service-headless.yaml")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let server = container(pod, "mcp-server");
    let relay = container(pod, "brownout-relay");
    let relay_args = strings(&relay["args"]);

    // The admin API is behind the Secret's token and, beyond the pod's loopback, reachable
    // only from the runner Jobs' pods (the NetworkPolicy).
    let admin_at = relay_args
        .iter()
        .position(|a| a == "--admin")
        .and_then(|k| relay_args.get(k + 1))
        .expect("--admin");
    if !admin_at.starts_with("127.0.0.1:") {
        admin_only_from_the_runner(deployment, relay, admin_at);
    }
    let token_env = relay["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "BROWNOUT_ADMIN_TOKEN")
        .expect("BROWNOUT_ADMIN_TOKEN");
    let key = &token_env["valueFrom"]["secretKeyRef"];
    assert_eq!(key["name"], secret["metadata"]["name"]);
    let token = secret["stringData"][key["key"].as_str().expect("key")]
        .as_str()
        .expect("token")
        .to_string();
    // The Services reach the relay's port by name, and select the Deployment's pods.
    let port = &relay["ports"][0];
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port["name"]);
    assert_eq!(headless["spec"]["clusterIP"], "None");
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for svc in [service, headless] {
        for (k, v) in svc["spec"]["selector"].as_object().expect("selector") {
            assert_eq!(&labels[k], v, "{k}");
        }
    }
    let listen = relay_args
        .iter()
        .position(|a| a == "--listen")
        .and_then(|k| relay_args.get(k + 1))
        .expect("--listen");
    assert!(
        listen.ends_with(&format!(":{}", port["containerPort"])),
        "{listen}"
    );
    for c in [server, relay] {
        assert!(
            c["resources"]["limits"]["memory"].is_string(),
            "limits on {}",
            c["name"]
        );
    }

    // Start both containers' commands.
    let ports = Ports::new();
    let mut srv: Guard = spawn(exe(&ports.map(&strings(&server["args"]))));
    wait_port(ports.port(0), &mut srv);
    let mut cmd = exe(&ports.map(&relay_args));
    cmd.env("BROWNOUT_ADMIN_TOKEN", &token);
    let mut rel = spawn(cmd);
    wait_port(ports.port(1), &mut rel);
    wait_port(ports.port(2), &mut rel);

    // The probes, exactly as the kubelet would exec them in the container (token in its env).
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        let argv = ports.map(&strings(&relay[probe]["exec"]["command"]));
        let out = exe(&argv)
            .env_clear()
            .env("BROWNOUT_ADMIN_TOKEN", &token)
            .output()
            .expect("probe");
        assert!(out.status.success(), "{probe}: {}", text(&out));
        assert!(text(&out).contains("relay up"), "{}", text(&out));
        let out = exe(&argv).env_clear().output().expect("probe");
        assert_eq!(
            out.status.code(),
            Some(1),
            "{probe} without the token is refused"
        );
    }

    // An agent through the Service's port: the relay passes it to the server.
    let url = format!("http://127.0.0.1:{}/mcp", ports.port(1));
    let r = py_http(
        &url,
        &[],
        json!([{"op": "call_tool", "name": "search_incidents", "arguments": {"query": "db"}}]),
    );
    assert_eq!(r["ops"][0]["ok"], true, "{r}");

    // The runner Job's command with the ConfigMap's experiment (shortened) against it.
    let job = &docs("runner-job.yaml")[0];
    let cm = &docs("experiment-configmap.yaml")[0];
    let runner = container(&job["spec"]["template"]["spec"], "runner");
    let dir = tmp();
    let exp = cm["data"]["experiment.yaml"]
        .as_str()
        .expect("experiment")
        .replace("http://mcp-server:8900/mcp", &url)
        .replace("baseline: 10s", "baseline: 1s")
        .replace("duration: 30s", "duration: 1s")
        .replace("over 10s", "over 1s")
        .replace("samples: 20", "samples: 5");
    assert!(exp.contains(&url), "the target is the Service's URL");
    std::fs::write(dir.path().join("experiment.yaml"), exp).expect("write");
    std::fs::write(
        dir.path().join("workload.yaml"),
        cm["data"]["workload.yaml"].as_str().expect("workload"),
    )
    .expect("write");
    let at = |p: &str| {
        p.replace("/experiment/", &format!("{}/", dir.path().display()))
            .replace("/work/", &format!("{}/", dir.path().display()))
    };
    let args: Vec<String> = strings(&runner["args"]).iter().map(|a| at(a)).collect();
    let store = dir.path().join("store.sqlite");
    let out = exe(&args)
        .current_dir(dir.path())
        .env("BROWNOUT_STORE", &store)
        .env("HOME", dir.path())
        .output()
        .expect("run");
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "a verdict: {code:?} {}",
        text(&out)
    );
    let journal: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("journal.json")).expect("journal"),
    )
    .expect("journal json");
    assert_eq!(
        journal["experiment"]["target"]["url"],
        url.as_str(),
        "{journal}"
    );
    let calls = journal["baseline"]["slis"]["calls"].as_u64().unwrap_or(0);
    assert!(
        calls > 0,
        "the run's load went through the sidecar: {journal}"
    );
    assert!(
        dir.path().join("report.md").exists(),
        "--report md:… written"
    );
    assert!(store.exists(), "kept in BROWNOUT_STORE");

    // The fleet experiment: valid, its relays found through the headless Service at the
    // sidecar's ports, its admin token the Job's from the same Secret key as the relays'.
    let fleet = cm["data"]["fleet.yaml"].as_str().expect("fleet.yaml");
    std::fs::write(dir.path().join("fleet.yaml"), fleet).expect("write");
    let out = exe(&["experiment".into(), "check".into(), "fleet.yaml".into()])
        .current_dir(dir.path())
        .output()
        .expect("experiment check");
    assert!(out.status.success(), "{}", text(&out));
    let f: Value = serde_yaml_value(fleet);
    let t = &f["target"]["fleet"];
    assert!(
        t["dns"].as_str().is_some_and(|d| d.starts_with(&format!(
            "{}.",
            headless["metadata"]["name"].as_str().unwrap_or("?")
        ))),
        "{t}"
    );
    let port_of = |name: &str| {
        relay["ports"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .map(|p| p["containerPort"].clone())
            .unwrap_or_default()
    };
    assert_eq!(t["admin_port"], port_of("admin"));
    assert_eq!(t["mcp_port"], port_of("mcp"));
    let env_name = f["target"]["admin_token_env"]
        .as_str()
        .expect("admin_token_env");
    let job_env = runner["env"]
        .as_array()
        .and_then(|e| e.iter().find(|v| v["name"] == env_name))
        .unwrap_or_else(|| panic!("the Job sets {env_name}"));
    assert_eq!(job_env["valueFrom"]["secretKeyRef"], *key);
    drop(rel);
    drop(srv);
}

fn static_binary() -> Option<PathBuf> {
    let bin = repo().join("target/static/brownout");
    let required = std::env::var("BROWNOUT_REQUIRE_STATIC").is_ok_and(|v| v == "1");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let why = if !bin.exists() {
        Some(format!(
            "{} is missing: scripts/build-static --profile dev (scripts/test does it)",
            bin.display()
        ))
    } else if !root {
        Some("chroot needs root".to_string())
    } else {
        None
    };
    match why {
        None => Some(bin),
        Some(w) if required => panic!("{w} (BROWNOUT_REQUIRE_STATIC=1)"),
        Some(w) => {
            eprintln!("\n!!! SKIPPED: the static binary test: {w}\n");
            None
        }
    }
}

/// An ELF program header naming the program interpreter (the dynamic loader).
const PT_INTERP: u32 = 3;

/// The types of a 64-bit little-endian ELF file's program headers.
fn program_headers(elf: &[u8]) -> Vec<u32> {
    assert_eq!(elf.get(..4), Some(&b"\x7fELF"[..]), "an ELF file");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let mut off = [0u8; 8];
    off.copy_from_slice(&elf[0x20..0x28]);
    let (phoff, size, n) = (u64::from_le_bytes(off) as usize, u16_at(0x36), u16_at(0x38));
    (0..n)
        .map(|k| {
            let o = phoff + k * size;
            u32::from_le_bytes([elf[o], elf[o + 1], elf[o + 2], elf[o + 3]])
        })
        .collect()
}

/// `chroot ROOT /brownout ARGS…` with nothing in the environment but `env`.
fn jailed(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    // Found on this process's PATH: the child's environment is empty.
    let chroot = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join("chroot"))
        .find(|p| p.exists())
        .expect("chroot (coreutils)");
    let mut c = Command::new(chroot);
    c.arg(root).arg("/brownout").args(args).env_clear();
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

#[test]
fn the_static_binary_runs_alone_in_an_empty_root() {
    let Some(bin) = static_binary() else { return };
    let bytes = std::fs::read(&bin).expect("read");
    assert!(
        !program_headers(&bytes).contains(&PT_INTERP),
        "no program interpreter (dynamic loader): the binary is static"
    );
    let dir = tmp();
    let root = dir.path();
    std::fs::copy(&bin, root.join("brownout")).expect("copy");
    let only: Vec<_> = std::fs::read_dir(root)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(only.len(), 1, "the root holds the binary only: {only:?}");

    let out = jailed(root, &["--version"], &[]).output().expect("chroot");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        text(&out)
    );

    // A server, the relay in front of it and its admin API, all inside the empty root.
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    let (a1, a2, a3) = (
        format!("127.0.0.1:{p1}"),
        format!("127.0.0.1:{p2}"),
        format!("127.0.0.1:{p3}"),
    );
    let mut srv = spawn(jailed(root, &["fixture", "--http", &a1], &[]));
    wait_port(p1, &mut srv);
    let up = format!("http://{a1}/mcp");
    let mut rel = spawn(jailed(
        root,
        &[
            "proxy",
            "http",
            "--upstream",
            &up,
            "--listen",
            &a2,
            "--admin",
            &a3,
        ],
        &[("BROWNOUT_ADMIN_TOKEN", "t0ken")],
    ));
    wait_port(p2, &mut rel);
    wait_port(p3, &mut rel);
    let out = jailed(
        root,
        &["faults", "status", "--admin", &a3],
        &[("BROWNOUT_ADMIN_TOKEN", "t0ken")],
    )
    .output()
    .expect("status");
    assert!(out.status.success(), "{}", text(&out));
    let out = jailed(
        root,
        &[
            "faults",
            "add",
            "--admin",
            &a3,
            "{id: e, kind: error, tools: [get_incident]}",
        ],
        &[("BROWNOUT_ADMIN_TOKEN", "t0ken")],
    )
    .output()
    .expect("add");
    assert!(out.status.success(), "{}", text(&out));
    let r = py_http(
        &format!("http://{a2}/mcp"),
        &[],
        json!([
            {"op": "call_tool", "name": "search_incidents", "arguments": {"query": "db"}},
            {"op": "call_tool", "name": "get_incident", "arguments": {"id": "INC-1"}},
        ]),
    );
    assert_eq!(r["ops"][0]["ok"], true, "{r}");
    let faulted = &r["ops"][1];
    assert!(
        faulted["ok"] == false || faulted["result"]["isError"] == true,
        "the fault added inside the root reached the call: {r}"
    );
    drop(rel);
    drop(srv);
}
