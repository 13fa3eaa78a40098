//! Text from a journal, made safe to put in Markdown: a journal is input (it may be
//! imported from anywhere), so nothing in it may become HTML, a link, or a table cell
//! boundary in the report. [`text`] for prose and table cells, [`code`] for inline code,
//! [`fenced`] for a code block.

/// Prose or a table cell: HTML's `<`, `>` and `&` become entities (a `<script>` shows as
/// text), Markdown's punctuation is escaped (no links, images, emphasis or headings made
/// from a journal), `|` cannot end a cell and a line break cannot end a row.
pub fn text(x: &str) -> String {
    let mut o = String::with_capacity(x.len());
    let mut chars = x.chars().peekable();
    let mut first = true;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        // Only what could open HTML (a tag, a comment, an entity) or a quote is escaped:
        // a bound such as `<= 131.2ms` stays readable in the Markdown itself.
        let opens = |n: Option<char>, extra: &[char]| {
            n.is_some_and(|n| n.is_ascii_alphabetic() || extra.contains(&n))
        };
        let at_start = std::mem::replace(&mut first, false);
        match c {
            '<' if opens(next, &['/', '!', '?']) => o.push_str("&lt;"),
            '>' if at_start => o.push_str("&gt;"),
            '&' if opens(next, &['#']) => o.push_str("&amp;"),
            '\n' | '\r' => o.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' => {
                o.push('\\');
                o.push(c);
            }
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// An inline code span holding `x` as it is (HTML in a code span is shown, not run): the
/// span's backtick fence is longer than any run of backticks inside, `|` is escaped for
/// tables and line breaks become spaces.
pub fn code(x: &str) -> String {
    let body: String = x
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .replace('|', "\\|");
    let fence = "`".repeat(longest_run(&body, '`') + 1);
    // A space on each side keeps a backtick at either end from joining the fence.
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// A fenced code block (`lang` after the fence) holding `x`; the fence is longer than any
/// run of backticks inside, so the content cannot close it.
pub fn fenced(x: &str, lang: &str) -> String {
    let fence = "`".repeat((longest_run(x, '`') + 1).max(3));
    format!("{fence}{lang}\n{x}\n{fence}")
}

fn longest_run(x: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in x.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_and_markdown_from_a_journal_stay_text() {
        let t = text("<script>alert(1)</script> [x](javascript:y) | a\nb");
        assert!(!t.contains('<') && !t.contains('\n'), "{t}");
        assert!(t.starts_with("&lt;script>alert(1)&lt;/script>"), "{t}");
        assert!(t.contains("\\[x\\](javascript:y)"), "{t}");
        assert!(t.contains("\\| a b"), "{t}");
        // What cannot open HTML stays as written.
        assert_eq!(text("p95 <= 131.2ms & a < b"), "p95 <= 131.2ms & a < b");
        assert_eq!(text("&amp; <!-- x"), "&amp;amp; &lt;!-- x");
        assert_eq!(text("> quoted"), "&gt; quoted");
    }

    #[test]
    fn code_spans_and_blocks_cannot_be_closed_from_inside() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("p|q"), "`p\\|q`");
        assert_eq!(code("`x"), "`` `x ``");
        let block = fenced("x\n```\n<b>", "json");
        assert!(
            block.starts_with("````json\n") && block.ends_with("\n````"),
            "{block}"
        );
    }
}
