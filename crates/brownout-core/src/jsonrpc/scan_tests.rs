//! The one-pass reader against serde_json's ([`super::reference::agree`]): at the edges of
//! the grammar and of the typed reads, and on messages mutated at random (a fixed seed).

use super::reference;

/// Inputs at the edges of the grammar and of the typed reads: the one-pass reader must
/// say of each what serde_json says.
const EDGES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":[1,{"a":null}]}}}"#,
    r#" {"jsonrpc" : "2.0" , "id" : 1 , "method" : "tools/call" , "params" : { "name" : "echo" } } "#,
    "{\"jsonrpc\":\"2.0\",\n\t\"id\":1,\r\n\"method\":\"ping\"}\n",
    r#"{"\u006asonrpc":"2.0","\u0069d":7,"method":"x"}"#,
    r#"{"jsonrpc":"2\u002e0","id":1,"method":"m\u00e9thode"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","id":2}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","x":1,"x":2}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"\udc00x"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"\ud800","result":{}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"\ud83d\ude00"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"\ud83d\u0041"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"\ud83d\n"}"#,
    r#"{"jsonrpc":"2.0","id":"\ud800","method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"k":"\ud800"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"\ud800":1}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\ud800":1,"name":"a"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":{"a":1}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"e\"cho\\"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo"]}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"echo"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"name":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"isError":false,"isError":true}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"isError":null}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"isError":"true"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true,"\ud800":0}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":[true]}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":0}"#,
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"error":null,"result":{}}"#,
    r#"{"jsonrpc":null,"id":1,"method":"x"}"#,
    r#"{"jsonrpc":2.0,"id":1,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":null,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
    r#"{"jsonrpc":"2.0","id":-0.5e+10,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":01,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":1.,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":1e,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":-,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x",}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x"} x"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1,]}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a" 1}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{1:1}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[nul]}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":["\x"]}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":["\u12G4"]}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"x","params":["\u12"]}"#,
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[\"a\u{1}b\"]}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[\"\u{7f}\u{e9}\u{1F600}\"]}",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\\",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x",
    "\u{a0}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}",
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5, {"jsonrpc":"2.0","method":"x"}]"#,
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},]"#,
    "{}",
    "{",
    "",
    "null",
];

#[test]
fn one_pass_reads_what_serde_reads_at_the_edges() {
    let mut failures = Vec::new();
    for input in EDGES {
        if let Err(e) = reference::agree(input.as_bytes()) {
            failures.push(format!("{input}\n{e}"));
        }
    }
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}{}}}"#,
        "[{\"a\":".repeat(5_000),
        "1}]".repeat(5_000)
    );
    let unbalanced = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}1]}}"#,
        "[".repeat(70)
    );
    for input in [deep, unbalanced] {
        if let Err(e) = reference::agree(input.as_bytes()) {
            failures.push(format!("(deep)\n{e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn one_pass_reads_what_serde_reads_on_mutated_messages() {
    // Messages mutated a byte at a time from an alphabet of JSON's structural bytes,
    // escapes and non-ASCII text; a fixed seed, so a failure replays.
    let seeds: Vec<&str> = EDGES.iter().copied().filter(|s| s.len() > 20).collect();
    let alphabet: Vec<&str> = vec![
        "{",
        "}",
        "[",
        "]",
        "\"",
        ":",
        ",",
        "\\",
        "u",
        "d",
        "8",
        "0",
        "c",
        "e",
        "E",
        "-",
        "+",
        ".",
        "1",
        "n",
        "t",
        " ",
        "\n",
        "\u{1}",
        "é",
        "😀",
        "null",
        "\\ud800",
        "\\udc00",
        "\\u0041",
        "\"name\":",
        "\"isError\":true",
        "\"id\":",
    ];
    let mut failures = Vec::new();
    for m in mutations(&seeds, &alphabet, 30_000, 0x9e37_79b9_7f4a_7c15) {
        if let Err(e) = reference::agree(&m) {
            failures.push(format!("{}\n{e}", String::from_utf8_lossy(&m)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements, the first:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn every_position_of_a_special_byte_in_a_long_string_is_seen() {
    // Plain text is passed over eight bytes at a time: a quote, an escape or a control
    // character at any offset of a word must still be seen, in decoded and skipped strings.
    let mut failures = Vec::new();
    for len in 0..40 {
        for at in 0..=len {
            for special in [
                "\"", "\\n", "\u{1f}", "\u{1}", "\u{7f}", "é", "\\ud800", "\\",
            ] {
                let text = format!("{}{special}{}", "a".repeat(at), "b".repeat(len - at));
                for msg in [
                    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{text}"}}"#),
                    format!(
                        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{text}","x":"{text}"}}}}"#
                    ),
                ] {
                    if let Err(e) = reference::agree(msg.as_bytes()) {
                        failures.push(format!("{msg}\n{e}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}",
        failures
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn an_argument_is_read_from_the_text_as_from_the_parsed_arguments() {
    use super::{classify, Message};
    // Selector pointers against `arguments`: the value read along the path from the text
    // must be the value `Value::pointer` finds in the parsed arguments.
    let arguments = [
        r#"{"message":"never","n":1}"#,
        r#"{"message":"a","message":"b"}"#,
        r#"{"a/b":{"c~d":[10,{"e":true},[]]},"":0}"#,
        r#"{"\u006dessage":"escaped name","list":[1,2,3]}"#,
        r#"{"deep":{"x":{"y":{"z":"found"}}},"deep":{"x":{"y":{"z":"last"}}}}"#,
        r#"[1,{"message":"in an array"}]"#,
        r#""just a string""#,
        r#"null"#,
        r#"{}"#,
        r#"{"list":[[0,1],[2,[3,4]]],"s":"\ud83d\ude00"}"#,
    ];
    let pointers = [
        "",
        "/message",
        "/n",
        "/a~1b",
        "/a~1b/c~0d",
        "/a~1b/c~0d/0",
        "/a~1b/c~0d/1/e",
        "/a~1b/c~0d/2",
        "/a~1b/c~0d/3",
        "/a~1b/c~0d/01",
        "/a~1b/c~0d/+1",
        "/a~1b/c~0d/-1",
        "/",
        "/list/1",
        "/list/0/1",
        "/list/1/1/0",
        "/deep/x/y/z",
        "/0",
        "/1/message",
        "/s",
        "/missing",
        "/message/x",
    ];
    let mut checked = 0;
    for args in arguments {
        for params in [
            format!(r#"{{"name":"t","arguments":{args}}}"#),
            format!(r#"{{"arguments":{args},"name":"t"}}"#),
            format!(r#"{{"arguments":{args},"arguments":{args}}}"#),
            r#"{"name":"t"}"#.to_string(),
        ] {
            let msg =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
            let Message::Single(v) = classify(msg.as_bytes()) else {
                panic!("not a message: {msg}")
            };
            for pointer in pointers {
                let tokens: Vec<String> = pointer
                    .split('/')
                    .skip(1)
                    .map(|t| t.replace("~1", "/").replace("~0", "~"))
                    .collect();
                let parsed = v.tool_arguments().and_then(|a| a.pointer(pointer).cloned());
                assert_eq!(v.argument(&tokens), parsed, "{pointer} in {params}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 10 * 4 * 22);
}

#[test]
fn an_argument_is_not_read_where_serde_json_refuses_the_arguments() {
    use super::{classify, Message};
    // The text is read along the pointer's path only, but the parsed arguments exist only
    // if serde_json reads all of them: a lone surrogate in a string or a name anywhere, a
    // number beyond f64's range, a nesting deeper than serde_json's limit. Where it refuses
    // them, no argument is read (a condition on them never held, and must not start to).
    let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let mut arguments: Vec<String> = [
        r#"{"a":1,"b":"\ud800"}"#,
        r#"{"a":1,"b":"\udc00"}"#,
        r#"{"a":1,"b":"\ud800\u0041"}"#,
        r#"{"a":1,"b":"\ud800\n"}"#,
        r#"{"a":1,"b":"\ud83d\ude00 \u00e9 \n"}"#,
        r#"{"a":1,"b":{"\ud800":1}}"#,
        r#"{"a":1,"b":[{"c":["\udfff"]}]}"#,
        r#"{"a":1,"b":1e400}"#,
        r#"{"a":1,"b":-1e400}"#,
        r#"{"a":1,"b":1e309}"#,
        r#"{"a":1,"b":1.7976931348623157e308}"#,
        r#"{"a":1,"b":1.7976931348623159e308}"#,
        r#"{"a":1,"b":17976931348623157e292}"#,
        r#"{"a":1,"b":0e999999999999999999999}"#,
        r#"{"a":1,"b":1e-400}"#,
        r#"{"a":1,"b":1e-99999999999999999999}"#,
        r#"{"a":1,"b":100000000000000000000000000000}"#,
        r#"{"a":1,"b":-0.000000000000000000000000000001}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    arguments.push(format!(r#"{{"a":1,"b":{}.5}}"#, "9".repeat(400)));
    arguments.push(format!(r#"{{"a":1,"b":0.{}}}"#, "9".repeat(400)));
    arguments.push(format!(r#"{{"a":1,"b":1{}}}"#, "0".repeat(308)));
    arguments.push(format!(r#"{{"a":1,"b":1{}}}"#, "0".repeat(309)));
    for n in [60, 124, 125, 126, 127, 200] {
        arguments.push(format!(r#"{{"a":1,"b":{}}}"#, nested(n)));
        arguments.push(format!(r#"{{"a":{{"x":{}}}}}"#, nested(n)));
    }
    let mut failures = Vec::new();
    for args in &arguments {
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{args}}}}}"#
        );
        let Message::Single(v) = classify(msg.as_bytes()) else {
            panic!("not a message: {msg}")
        };
        for pointer in ["", "/a", "/b", "/a/x", "/a/x/0"] {
            let tokens: Vec<String> = pointer.split('/').skip(1).map(String::from).collect();
            let parsed = v.tool_arguments().and_then(|a| a.pointer(pointer).cloned());
            let read = v.argument(&tokens);
            if read != parsed {
                let mut line = format!("{pointer} in {args}: text {read:?}, parsed {parsed:?}");
                line.truncate(160);
                failures.push(line);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_argument_is_read_as_from_the_parsed_arguments_on_mutated_arguments() {
    use super::{classify, Message};
    // Arguments mutated a byte at a time (a fixed seed): wherever the message is still
    // one, the value read along each pointer from the text is `Value::pointer`'s.
    let seeds = [
        r#"{"a":1,"b":{"c":[10,{"d":"x"},[]],"a":2},"e":"\u00e9\ud83d\ude00"}"#,
        r#"{"a":[1,[2,3]],"b":-0.5e-3,"c":{"":null,"~":true,"/":false}}"#,
        r#"[{"a":1},{"a":"\u0041"},12345678901234567890123]"#,
    ];
    let alphabet = [
        "{", "}", "[", "]", "\"", ":", ",", "\\", "u", "d", "8", "0", "e", "E", "-", "+", ".", "1",
        "9", "\\ud800", "\\udc00", "\\u0041", "e999", "\"a\":", "[[[[", "]]]]", "null",
    ];
    let pointers = [
        "", "/a", "/b", "/a/0", "/a/1/0", "/b/c", "/b/c/1/d", "/b/a", "/0/a", "/1", "/2", "/c/",
        "/c/~0", "/c/~1", "/e",
    ];
    let (mut failures, mut read) = (Vec::new(), 0);
    for a in mutations(&seeds, &alphabet, 20_000, 0x2545_f491_4f6c_dd1d) {
        let Ok(args) = std::str::from_utf8(&a) else {
            continue;
        };
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{args}}}}}"#
        );
        let Message::Single(v) = classify(msg.as_bytes()) else {
            continue;
        };
        let whole = v.tool_arguments();
        for pointer in pointers {
            let tokens: Vec<String> = pointer
                .split('/')
                .skip(1)
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect();
            let parsed = whole.as_ref().and_then(|w| w.pointer(pointer).cloned());
            let got = v.argument(&tokens);
            read += usize::from(got.is_some());
            if got != parsed {
                failures.push(format!(
                    "{pointer} in {args}: text {got:?}, parsed {parsed:?}"
                ));
            }
        }
    }
    assert!(read > 5_000, "many mutated arguments still read: {read}");
    assert!(
        failures.is_empty(),
        "{} disagreements, the first:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `count` texts, each one of `seeds` with one to three pieces of `alphabet` inserted or
/// put in place of a byte, or a byte removed; the same for the same `state`.
fn mutations(seeds: &[&str], alphabet: &[&str], count: usize, mut state: u64) -> Vec<Vec<u8>> {
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    (0..count)
        .map(|_| {
            let mut m = seeds[next(seeds.len())].as_bytes().to_vec();
            for _ in 0..1 + next(3) {
                let at = next(m.len() + 1);
                match next(3) {
                    0 if at < m.len() => {
                        m.remove(at);
                    }
                    1 if at < m.len() => {
                        m.splice(at..at + 1, alphabet[next(alphabet.len())].bytes());
                    }
                    _ => {
                        m.splice(at..at, alphabet[next(alphabet.len())].bytes());
                    }
                }
            }
            m
        })
        .collect()
}
