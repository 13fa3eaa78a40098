//! The docs run as written: every `sh` block in README.md and docs/*.md is marked, on the
//! line before its fence, `<!-- runnable -->` or `<!-- not runnable: WHY -->`, and every
//! runnable one is run here — from a scratch folder that sees the repository's `examples/`
//! and `docs/`, with the built `brownout` first on PATH and a store of its own.
//!
//! Each command of a block must exit 0, or the code its comment states (`…: exit 1`); a
//! command ending in `&` runs in the background and is stopped when the block ends.

mod common;

use common::{brownout, repo, tmp};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A block of shell commands in a document, and where it starts.
struct Block {
    file: String,
    line: usize,
    runnable: bool,
    text: String,
}

fn blocks(file: &Path) -> Vec<Block> {
    let name = file
        .strip_prefix(repo())
        .unwrap_or(file)
        .display()
        .to_string();
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{name}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() == "```sh" {
            let mark = if i > 0 { lines[i - 1].trim() } else { "" };
            let runnable = match mark {
                "<!-- runnable -->" => true,
                m if m.starts_with("<!-- not runnable:") && m.ends_with("-->") => false,
                _ => panic!(
                    "{name}:{}: a sh block without `<!-- runnable -->` or `<!-- not runnable: WHY -->` on the line before",
                    i + 1
                ),
            };
            let start = i + 1;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim_end() != "```" {
                body.push(lines[i]);
                i += 1;
            }
            out.push(Block {
                file: name.clone(),
                line: start,
                runnable,
                text: body.join("\n"),
            });
        }
        i += 1;
    }
    out
}

/// The block's commands: continuation lines joined, heredocs kept whole, comments and
/// blank lines dropped.
fn commands(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = block.lines();
    while let Some(line) = lines.next() {
        let mut cmd = line.to_string();
        while cmd.trim_end().ends_with('\\') {
            match lines.next() {
                Some(next) => {
                    cmd.push('\n');
                    cmd.push_str(next);
                }
                None => break,
            }
        }
        if let Some(tag) = heredoc_tag(&cmd) {
            for next in lines.by_ref() {
                cmd.push('\n');
                cmd.push_str(next);
                if next.trim() == tag {
                    break;
                }
            }
        }
        let t = cmd.trim();
        if !t.is_empty() && !t.starts_with('#') {
            out.push(cmd);
        }
    }
    out
}

fn heredoc_tag(cmd: &str) -> Option<String> {
    let at = cmd.find("<<")?;
    let rest = cmd[at + 2..].trim_start_matches('-').trim_start();
    let tag: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!tag.is_empty()).then_some(tag)
}

/// The exit code a command's comment states (`…: exit N`), else 0.
fn expected_exit(cmd: &str) -> i32 {
    let last = cmd.lines().last().unwrap_or_default();
    let Some(comment) = last.split(" # ").nth(1) else {
        return 0;
    };
    comment
        .rsplit_once(": exit ")
        .and_then(|(_, n)| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A bash script running each command and checking its exit code.
fn script(cmds: &[String]) -> String {
    let mut s = String::from("set -u\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n");
    for (k, cmd) in cmds.iter().enumerate() {
        s.push_str(cmd);
        s.push('\n');
        if cmd.trim_end().ends_with('&') {
            s.push_str("sleep 1\n");
            continue;
        }
        let want = expected_exit(cmd);
        s.push_str(&format!(
            "rc=$?; if [ $rc -ne {want} ]; then echo \"docs_run: command {} exited $rc, not {want}\" >&2; exit 97; fi\n",
            k + 1
        ));
    }
    s
}

fn docs() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut d: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    d.sort();
    files.extend(d);
    files
}

#[test]
fn the_parser_reads_commands_as_bash_would() {
    let cmds = commands(
        "# a comment\nbrownout a \\\n  --b  # done: exit 1\ncat > p.yaml <<'EOF'\nx: 1\nEOF\nfixture &\n",
    );
    assert_eq!(cmds.len(), 3, "{cmds:?}");
    assert_eq!(expected_exit(&cmds[0]), 1);
    assert!(cmds[1].ends_with("EOF"), "{cmds:?}");
    assert_eq!(expected_exit("brownout x   # check; exit 1 if any"), 0);
}

#[test]
fn every_runnable_block_in_the_docs_runs_as_written() {
    let bin = Path::new(brownout()).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let all: Vec<Block> = docs().iter().flat_map(|f| blocks(f)).collect();
    let runnable: Vec<&Block> = all.iter().filter(|b| b.runnable).collect();
    assert!(
        runnable.len() >= 5,
        "too few runnable blocks: {}",
        runnable.len()
    );
    let mut failures = Vec::new();
    for b in runnable {
        let dir = tmp();
        for link in ["examples", "docs"] {
            std::os::unix::fs::symlink(repo().join(link), dir.path().join(link)).expect("link");
        }
        let cmds = commands(&b.text);
        let out = Command::new("timeout")
            .args(["-k", "10", "300", "bash", "-c"])
            .arg(script(&cmds))
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("BROWNOUT_STORE", dir.path().join("journal.sqlite"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run bash");
        if !out.status.success() {
            failures.push(format!(
                "{}:{}: exit {:?}\n{}\n--- stderr (tail) ---\n{}",
                b.file,
                b.line,
                out.status.code(),
                b.text,
                tail(&String::from_utf8_lossy(&out.stderr), 25)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
