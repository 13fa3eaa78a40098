//! Reading a target's `tools/list` under bounds, for `describe_target`: a hostile or broken
//! target may paginate forever, send pages of thousands of tools or huge schemas. The read
//! stops at the first bound reached — tools, bytes, pages or wall time — and says which.

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};
use std::time::Instant;

/// The most tools described (a target that lists more is cut, and says so).
pub const MAX_TOOLS: usize = 500;
/// The most `tools/list` bytes read (the tools' JSON, summed over pages).
pub const MAX_BYTES: usize = 8 * 1024 * 1024;
/// The most `tools/list` pages read.
pub const MAX_PAGES: usize = 100;

/// What the read found, and the bound that stopped it (if one did).
pub struct Read {
    pub tools: Vec<Tool>,
    pub pages: usize,
    pub bytes: usize,
    pub stopped_by: Option<String>,
}

/// Read `tools/list` page by page until the target gives no cursor or a bound is reached;
/// an error only when the first page cannot be read.
pub async fn read(peer: &Peer<RoleClient>, deadline: Instant) -> Result<Read, String> {
    let mut r = Read {
        tools: Vec::new(),
        pages: 0,
        bytes: 0,
        stopped_by: None,
    };
    let mut cursor: Option<String> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = match tokio::time::timeout(left, peer.list_tools(Some(params))).await {
            Err(_) if r.pages > 0 => {
                r.stopped_by = Some(format!(
                    "time: tools/list pages still coming after the call's timeout ({} pages read)",
                    r.pages
                ));
                return Ok(r);
            }
            Err(_) => return Err("tools/list did not answer within the timeout".into()),
            Ok(Err(e)) if r.pages > 0 => {
                r.stopped_by = Some(format!("error: page {} failed: {e}", r.pages + 1));
                return Ok(r);
            }
            Ok(Err(e)) => return Err(format!("tools/list failed: {e}")),
            Ok(Ok(p)) => p,
        };
        r.pages += 1;
        for t in page.tools {
            r.bytes += serde_json::to_string(&t).map_or(0, |s| s.len());
            if r.bytes > MAX_BYTES {
                r.stopped_by = Some(format!(
                    "bytes: the tools' JSON passed {MAX_BYTES} bytes after {} tools",
                    r.tools.len()
                ));
                return Ok(r);
            }
            if r.tools.len() == MAX_TOOLS {
                r.stopped_by = Some(format!("tools: the target lists more than {MAX_TOOLS}"));
                return Ok(r);
            }
            r.tools.push(t);
        }
        match page.next_cursor {
            None => return Ok(r),
            Some(_) if r.pages >= MAX_PAGES => {
                r.stopped_by = Some(format!(
                    "pages: tools/list still paginating after {MAX_PAGES} pages"
                ));
                return Ok(r);
            }
            Some(c) => cursor = Some(c),
        }
    }
}
