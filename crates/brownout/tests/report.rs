//! Reports from real journals: Markdown (verdict first), JUnit XML (valid against the XSD in
//! tests/data, checked with xmllint), HTML (self-contained, loaded in headless Chromium:
//! charts rendered with the journal's data points, a non-blank screenshot, no console
//! messages), and the round trip `brownout run --report … --store …` → `journal report`.

mod common;
#[path = "store_support/mod.rs"]
mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn report(input: &Path, format: &str, dir: &Path) -> String {
    let (code, out, err) = journal(
        &dir.join("journal.sqlite"),
        &["report", &input.display().to_string(), "--format", format],
    );
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn markdown_puts_the_verdict_first_then_each_part_in_order() {
    let dir = common::tmp();
    let md = report(&aborted(), "md", dir.path());
    assert!(
        md.starts_with("# ✗ FAILED — aborted by an SLO gate\n"),
        "{md}"
    );
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s:?} in\n{md}"));
    let order = [
        "**a breaching test experiment**",
        "## Steady-state hypothesis",
        "## Stages",
        "## SLO gates",
        "## Breach",
        "## Recovery",
        "## Rollbacks",
        "## What the client saw",
    ];
    for w in order.windows(2) {
        assert!(
            at(w[0]) < at(w[1]),
            "{:?} should come before {:?}",
            w[0],
            w[1]
        );
    }
    assert!(
        md.contains("MTTD") && md.contains("MTTR: **1.72 s**"),
        "{md}"
    );
    assert!(md.contains("| half | 50 % |"), "{md}");
    let green = report(&completed(), "md", dir.path());
    assert!(green.starts_with("# ✓ PASSED"), "{green}");
    assert!(!green.contains("## Breach"));
}

fn xmllint(xsd: &Path, xml: &Path) -> Output {
    Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(xsd)
        .arg(xml)
        .output()
        .expect("xmllint (libxml2-utils) is missing: run scripts/setup-peers")
}

#[test]
fn junit_is_valid_against_the_xsd_and_a_breach_is_a_failure_with_its_values() {
    let dir = common::tmp();
    let xsd = data("junit.xsd");
    let aborted_xml = report(&aborted(), "junit", dir.path());
    let green_xml = report(&completed(), "junit", dir.path());
    // Runs brownout could not carry out, or that were refused: an error, a skip.
    let mut failed = read_json(&completed());
    failed["status"] = "failed".into();
    failed["reason"] = "the target <did not> answer & left".into();
    let mut refused = read_json(&completed());
    refused["status"] = "refused".into();
    refused["stages"] = Value::Array(vec![]);
    let mut docs = vec![
        ("aborted", aborted_xml.clone()),
        ("completed", green_xml.clone()),
    ];
    for (name, j) in [("failed", &failed), ("refused", &refused)] {
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, j.to_string()).expect("write");
        docs.push((name, report(&f, "junit", dir.path())));
    }
    for (name, xml) in &docs {
        let f = dir.path().join(format!("{name}.xml"));
        std::fs::write(&f, xml).expect("write");
        let out = xmllint(&xsd, &f);
        assert!(
            out.status.success(),
            "{name}: {}\n{xml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The XSD is not a rubber stamp: a test case without a name is refused.
    let broken = dir.path().join("broken.xml");
    std::fs::write(
        &broken,
        green_xml.replacen(
            "<testcase name=\"before: search_incidents\"",
            "<testcase",
            1,
        ),
    )
    .expect("write");
    assert!(
        !xmllint(&xsd, &broken).status.success(),
        "the XSD accepted a nameless testcase"
    );

    assert!(
        aborted_xml.contains(
            r#"<testsuite name="a breaching test experiment" tests="6" failures="2" errors="0""#
        ),
        "{aborted_xml}"
    );
    assert!(aborted_xml
        .contains(r#"<testcase name="error_rate &lt; 1% over 2s" classname="brownout.gate""#));
    assert!(
        aborted_xml.contains("gate breached: error_rate &lt; 1% over 2s was 1.10 % (limit 1.00 %)"),
        "{aborted_xml}"
    );
    assert!(aborted_xml.contains(r#"<testcase name="half" classname="brownout.stage""#));
    assert!(
        green_xml.contains(r#"failures="0" errors="0""#),
        "{green_xml}"
    );
    assert_eq!(
        green_xml
            .matches("classname=\"brownout.steady_state\"")
            .count(),
        2
    );
    assert!(
        docs[2]
            .1
            .contains("<error message=\"the target &lt;did not&gt; answer &amp; left\""),
        "{}",
        docs[2].1
    );
    assert!(
        docs[3].1.contains("<skipped message=\"refused"),
        "{}",
        docs[3].1
    );
    assert!(
        docs[3]
            .1
            .contains(r#"<testcase name="canary" classname="brownout.stage" time="0.000">"#),
        "unreached stages are skipped: {}",
        docs[3].1
    );
}

/// Run headless Chromium with `args` on `file`, bounded in time: (stdout, stderr).
fn chromium(profile: &Path, args: &[&str], file: &Path) -> (String, String) {
    let bin = Path::new("/usr/bin/chromium");
    let out_path = profile.with_extension("out");
    let err_path = profile.with_extension("err");
    assert!(bin.exists(), "chromium is missing: run scripts/setup-peers");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg("--disable-background-networking")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,1400",
        ])
        .args(args)
        .arg(format!("file://{}", file.display()))
        // Files, not pipes: a DOM larger than a pipe's buffer would block chromium.
        .stdout(Stdio::from(
            std::fs::File::create(&out_path).expect("stdout file"),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(&err_path).expect("stderr file"),
        ))
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (read(&out_path), read(&err_path))
}

/// Polylines in a part of the DOM with at least three points: their point counts.
fn data_lines(dom: &str, figure: &str) -> Vec<usize> {
    let start = dom
        .find(&format!("id=\"{figure}\""))
        .unwrap_or_else(|| panic!("no #{figure} in the DOM"));
    let end = dom[start..]
        .find("</figure>")
        .map_or(dom.len(), |e| start + e);
    dom[start..end]
        .split("<polyline")
        .skip(1)
        .filter_map(|p| {
            let pts = p.split("points=\"").nth(1)?.split('"').next()?;
            let n = pts.split_whitespace().count();
            (n >= 3).then_some(n)
        })
        .collect()
}

#[test]
fn the_html_report_is_self_contained_and_its_charts_render_in_chromium() {
    let dir = common::tmp();
    let html = report(&aborted(), "html", dir.path());
    for banned in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(
            !html.contains(banned),
            "the report is not self-contained: {banned}"
        );
    }
    let file = dir.path().join("report.html");
    std::fs::write(&file, &html).expect("write");
    let profile = dir.path().join("profile");

    let (dom, log) = chromium(&profile, &["--dump-dom"], &file);
    assert!(dom.contains("FAILED — aborted by an SLO gate"), "{dom}");
    let seconds = read_json(&aborted())["series"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(seconds >= 3, "the journal has a series");
    // One line per SLI, with a point per second of the journal's series.
    assert_eq!(
        data_lines(&dom, "chart-errors"),
        [seconds],
        "the error-rate line"
    );
    assert_eq!(
        data_lines(&dom, "chart-latency"),
        [seconds; 3],
        "p50, p95, p99"
    );
    for label in [
        "breach",
        "faults removed",
        "gate: error_rate &lt; 1% over 2s",
        "gate: p99 &lt; 800ms over 2s",
        "canary 10%",
    ] {
        assert!(dom.contains(label), "no {label:?} in the charts");
    }
    assert!(!log.contains("CONSOLE"), "console messages: {log}");

    // The console check is not blind: a page that logs is caught.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><p>x</p><script>console.error('control-message')</script>",
    )
    .expect("write");
    let (_, clog) = chromium(&profile, &["--dump-dom"], &control);
    assert!(
        clog.contains("control-message"),
        "chromium printed no console message: {clog}"
    );

    // A screenshot: far from blank (a blank page of the same size compresses to little).
    let shot = dir.path().join("report.png");
    chromium(
        &profile,
        &[&format!("--screenshot={}", shot.display())],
        &file,
    );
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><title>blank</title>").expect("write");
    let blank_shot = dir.path().join("blank.png");
    chromium(
        &profile,
        &[&format!("--screenshot={}", blank_shot.display())],
        &blank,
    );
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    assert!(size(&blank_shot) > 0, "no screenshot of the blank page");
    assert!(
        size(&shot) > 10 * size(&blank_shot),
        "the screenshot looks blank: {} vs {} bytes",
        size(&shot),
        size(&blank_shot)
    );
}

#[test]
fn raw_html_in_a_journal_is_shown_as_text_never_run() {
    let dir = common::tmp();
    let mut j = read_json(&aborted());
    j["reason"] = "<script>alert(1)</script><img src=x onerror=alert(2)>".into();
    j["experiment"]["title"] = "<b>bold</b> & \"quoted\"".into();
    let f = dir.path().join("j.json");
    std::fs::write(&f, j.to_string()).expect("write");
    let html = report(&f, "html", dir.path());
    assert!(
        !html.contains("<script") && !html.contains("<img") && !html.contains("<b>bold"),
        "{html}"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
}

/// The Markdown report escapes a journal's text as the HTML and JUnit ones do: rendered
/// (as a pull request or a wiki renders it), nothing from the journal becomes HTML or a link.
#[test]
fn raw_html_in_a_journal_stays_text_in_the_markdown_report() {
    let dir = common::tmp();
    let mut j = read_json(&aborted());
    j["reason"] = "<script>alert(1)</script>\n<img src=x onerror=alert(2)>".into();
    j["experiment"]["title"] = "<b>bold</b> [click](javascript:alert(3))".into();
    if let Some(st) = j["stages"].get_mut(0) {
        st["stage"] = "<iframe src=//evil>".into();
    }
    let f = dir.path().join("j.json");
    std::fs::write(&f, j.to_string()).expect("write");
    let md = report(&f, "md", dir.path());
    let mut html = String::new();
    pulldown_cmark::html::push_html(
        &mut html,
        pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES),
    );
    for banned in ["<script", "<img", "<b>bold", "<iframe", "href=\"javascript"] {
        assert!(
            !html.contains(banned),
            "{banned} in the rendered report:\n{html}"
        );
    }
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{md}");
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt;"), "{html}");
}

#[test]
fn a_run_keeps_its_journal_in_the_store_and_writes_every_report_it_was_asked_for() {
    let dir = common::tmp();
    let d = dir.path();
    let store = d.join("store/journal.sqlite");
    let exp = read_json(&completed())["experiment"].clone();
    let workload = "arrival: {mode: closed, concurrency: 2}\nsteps:\n  - calls: [{tool: search_incidents, arguments: {query: db}}]\nservers:\n  - name: fixture\n    tools:\n      search_incidents: {latency: {added_ms: 1}}\n";
    std::fs::write(d.join("workload.yaml"), workload).expect("write");
    let text = format!(
        "title: round trip\nlabels: {{env: test}}\ntarget: {{command: [{}, fixture]}}\nsteady_state: {}\nload: {{workload: workload.yaml, sessions: 2}}\nbaseline: 1s\nmethod: [{{stage: canary, duration: 1s, sessions: 10%}}]\nfaults: [{{kind: latency, tools: [\"search_*\"], added_ms: 1, probability: 0.1}}]\ngates: [\"error_rate < 50% over 2s\"]\nrecovery: {{within: 10s}}\n",
        common::brownout(),
        exp["steady_state"],
    );
    std::fs::write(d.join("exp.yaml"), text).expect("write");
    let out = Command::new(common::brownout())
        .args(["run", "exp.yaml", "--journal", "run.json", "--store"])
        .arg(&store)
        .args([
            "--report",
            "md:r.md",
            "--report",
            "html:r.html",
            "--report",
            "junit:r.xml",
            "--report",
            "json:r.json",
        ])
        .current_dir(d)
        .env("XDG_DATA_HOME", d)
        .output()
        .expect("brownout run");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{log}");
    let journal_file = read_json(&d.join("run.json"));
    assert_eq!(
        read_json(&d.join("r.json")),
        journal_file,
        "json report = the journal"
    );
    let id = brownout::store::ingest::run_id(&journal_file);
    assert!(log.contains(&format!("store: run {id}")), "{log}");
    let runs = journal_json(&store, &["list", "--json"]);
    assert_eq!(runs[0]["run_id"], id.as_str(), "{runs}");
    assert_eq!(runs[0]["status"], "completed");
    // The stored journal is the file's; importing the file adds nothing.
    assert_eq!(journal_json(&store, &["show", &id, "--json"]), journal_file);
    let again = journal_json(
        &store,
        &[
            "import",
            "--json",
            &d.join("run.json").display().to_string(),
        ],
    );
    assert_eq!(again[0]["inserted"], false, "{again}");
    // Reports from the store equal the ones the run wrote.
    for (fmt, file) in [("md", "r.md"), ("html", "r.html"), ("junit", "r.xml")] {
        let (code, from_store, err) = journal(&store, &["report", &id, "--format", fmt]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            from_store,
            std::fs::read_to_string(d.join(file)).expect("report"),
            "{fmt}"
        );
    }
    assert!(xmllint(&data("junit.xsd"), &d.join("r.xml"))
        .status
        .success());
    // Nothing went to a default store.
    assert!(!d.join("brownout/journal.sqlite").exists());
}

/// Issue 23 §2: the "held" column was ✅/❌, emoji that a browser without a colour-emoji
/// font (headless Chromium here) draws as missing-glyph boxes; and a breached gate whose
/// last status read "holding" contradicted itself. Plain words now.
#[test]
fn the_gate_table_uses_words_every_font_has_and_does_not_contradict_itself() {
    let dir = common::tmp();
    for format in ["md", "html"] {
        let text = report(&aborted(), format, dir.path());
        let emoji: Vec<char> = text
            .chars()
            .filter(|c| matches!(*c as u32, 0x2600..=0x27BF | 0x1F000..=0x1FAFF))
            .filter(|c| !matches!(c, '✓' | '✗'))
            .collect();
        assert!(emoji.is_empty(), "{format}: {emoji:?}");
    }
    let md = report(&aborted(), "md", dir.path());
    let row = md
        .lines()
        .find(|l| l.contains("(breached)"))
        .unwrap_or_else(|| panic!("no breached gate row in\n{md}"));
    assert!(!row.ends_with("| holding |"), "{row}");
}
