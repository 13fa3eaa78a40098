//! Where a program an experiment names is found (a target's or a server's command, a
//! rollback's), for the code that starts it.

/// The program a target's command names: on PATH, else beside the experiment file, else —
/// for `brownout` itself (the examples' `[brownout, fixture]`) — this very executable, so an
/// example runs from a checkout (`cargo run -- run …`) where brownout is not installed.
pub fn program_path(program: &str, dir: &std::path::Path) -> Option<String> {
    if brownout_relay::relay::child::which(program).is_some() {
        return Some(program.to_string());
    }
    let beside = dir.join(program);
    if beside.exists() {
        return Some(beside.display().to_string());
    }
    if program == "brownout" {
        return std::env::current_exe()
            .ok()
            .map(|p| p.display().to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::program_path;

    #[test]
    fn brownout_itself_runs_even_when_it_is_not_installed() {
        let dir = std::path::Path::new("/nonexistent");
        assert_eq!(program_path("no-such-program-xyz", dir), None);
        let found = program_path("brownout", dir).expect("brownout resolves");
        if brownout_relay::relay::child::which("brownout").is_none() {
            let me = std::env::current_exe().expect("current exe");
            assert_eq!(found, me.display().to_string());
        }
        assert_eq!(program_path("sh", dir).as_deref(), Some("sh"));
    }
}
