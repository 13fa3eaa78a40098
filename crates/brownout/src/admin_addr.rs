//! A relay's admin API address as a user gives it, made a base URL: for `brownout faults`
//! and its fleet listing alike.

/// The admin API's base URL from what the user gave: `127.0.0.1:9901` (the form
/// `proxy --admin` takes), `localhost:9901`, or a URL (`http://127.0.0.1:9901/`).
pub fn admin_url(given: &str) -> anyhow::Result<String> {
    admin_url_of("--admin", given)
}

/// [`admin_url`] for an address given to `flag` (`--fleet`: one of its comma-separated
/// addresses), named in the error.
pub fn admin_url_of(flag: &str, given: &str) -> anyhow::Result<String> {
    let given = given.trim();
    if given.is_empty() {
        anyhow::bail!("{flag}: an empty address (give 127.0.0.1:9901 or http://127.0.0.1:9901)");
    }
    let url = if given.contains("://") {
        given.to_string()
    } else {
        format!("http://{given}")
    };
    let parsed = reqwest::Url::parse(&url).map_err(|e| {
        anyhow::anyhow!(
            "{flag} `{given}` is neither an address (127.0.0.1:9901) nor a URL (http://127.0.0.1:9901): {e}"
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        anyhow::bail!(
            "{flag} `{given}`: give the address the relay printed, such as 127.0.0.1:9901 or http://127.0.0.1:9901"
        );
    }
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_addresses_and_urls() {
        let ok = |s: &str| admin_url(s).expect(s);
        assert_eq!(ok("127.0.0.1:9901"), "http://127.0.0.1:9901");
        assert_eq!(ok("localhost:9901"), "http://localhost:9901");
        assert_eq!(ok("[::1]:9901"), "http://[::1]:9901");
        assert_eq!(ok("http://127.0.0.1:9901/"), "http://127.0.0.1:9901");
        assert!(admin_url("ftp://127.0.0.1:9901").is_err());
        assert!(admin_url("http://").is_err());
        let e = admin_url_of("--fleet", "").expect_err("empty");
        assert!(
            e.to_string().starts_with("--fleet: an empty address"),
            "{e}"
        );
    }
}
