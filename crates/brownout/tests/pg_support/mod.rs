//! A real PostgreSQL server for the store tests: the distribution's binaries
//! (`/usr/lib/postgresql/*/bin`, or `BROWNOUT_PG_BIN`; scripts/setup-peers installs them),
//! a fresh cluster (`initdb`) in a temp dir, started on a free loopback port with its socket
//! in that dir, and stopped (`pg_ctl stop`) when the test drops it. As root (CI) the server
//! runs as the `postgres` user (`runuser`), since PostgreSQL refuses to run as root.
//!
//! Local socket connections are trusted (the test's superuser); TCP needs a password
//! (scram-sha-256), which the application role `brownout` has, so the store's URL carries
//! one as a team's would.
//!
//! Where PostgreSQL cannot be started, [`Pg::start`] says so loudly on stderr and returns
//! `None` (the test then skips), unless `BROWNOUT_REQUIRE_PG=1` (scripts/test sets it),
//! when it panics: CI never skips these tests silently.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The application role's password (in URLs the tests print nowhere).
pub const PASSWORD: &str = "pg-s3cret-pw";

pub struct Pg {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
    pub port: u16,
    as_postgres: bool,
}

fn pg_bin() -> Option<PathBuf> {
    if let Some(b) = std::env::var_os("BROWNOUT_PG_BIN").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(b));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

fn skip(why: &str) -> Option<Pg> {
    let msg = format!("PostgreSQL cannot be started here: {why}");
    if std::env::var("BROWNOUT_REQUIRE_PG").is_ok_and(|v| v == "1") {
        panic!("{msg} (BROWNOUT_REQUIRE_PG=1)");
    }
    eprintln!("\n!!! SKIPPED: {msg}\n!!! install Debian's `postgresql` (scripts/setup-peers does) to run this test\n");
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Pg {
    /// Start a fresh server, with a database `brownout` owned by the role `brownout`.
    pub fn start() -> Option<Pg> {
        let Some(bin) = pg_bin() else {
            return skip("no /usr/lib/postgresql/*/bin/initdb (and BROWNOUT_PG_BIN unset)");
        };
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if as_postgres
            && !Command::new("id")
                .arg("postgres")
                .output()
                .is_ok_and(|o| o.status.success())
        {
            return skip("running as root and there is no `postgres` user to run the server as");
        }
        let dir = tempfile::Builder::new()
            .prefix("brownout-pg-")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().to_path_buf();
        if as_postgres {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        }
        let pg = Pg {
            _dir: dir,
            root,
            bin,
            port: free_port(),
            as_postgres,
        };
        let pwfile = pg.root.join("pw");
        std::fs::write(&pwfile, "superuser-pw\n").expect("pwfile");
        let out = pg.run(
            "initdb",
            &[
                "-D",
                &pg.data(),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--pwfile",
                &pwfile.display().to_string(),
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        if !out.status.success() {
            return skip(&format!("initdb failed: {}", text(&out)));
        }
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50",
            pg.port,
            pg.root.display()
        );
        let log = pg.root.join("log").display().to_string();
        let out = pg.run(
            "pg_ctl",
            &[
                "-D",
                &pg.data(),
                "-l",
                &log,
                "-o",
                &opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        if !out.status.success() {
            let log = std::fs::read_to_string(pg.root.join("log")).unwrap_or_default();
            return skip(&format!("pg_ctl start failed: {}\n{log}", text(&out)));
        }
        pg.psql(&format!("CREATE ROLE brownout LOGIN PASSWORD '{PASSWORD}'"));
        pg.psql("CREATE DATABASE brownout OWNER brownout");
        Some(pg)
    }

    fn data(&self) -> String {
        self.root.join("data").display().to_string()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args)
            .current_dir(&self.root)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()))
    }

    /// Run SQL as the superuser over the socket (assert it succeeds); its output.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("postgres", sql)
    }

    /// [`Pg::psql`] in the database `db`.
    pub fn psql_in(&self, db: &str, sql: &str) -> String {
        let out = self.run(
            "psql",
            &[
                "-h",
                &self.root.display().to_string(),
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                db,
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                sql,
            ],
        );
        assert!(out.status.success(), "psql {sql}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A new database owned by `brownout`; its URL (password included).
    pub fn database(&self, name: &str) -> String {
        self.psql(&format!("CREATE DATABASE {name} OWNER brownout"));
        self.url(name)
    }

    /// The URL of a database as the role `brownout`, over TCP with its password.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://brownout:{PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    pub fn socket_dir(&self) -> &Path {
        &self.root
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }
}
