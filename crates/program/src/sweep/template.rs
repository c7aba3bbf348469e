//! Sweep parameters and `{NAME}` placeholders: parsing `-p NAME=V1,V2,…` and
//! `-p NAME=A..B:STEP` (or `:*F` for a geometric range), the product of several
//! parameters, finding the placeholders a text uses and substituting a variant's values:
//! as they are into paths, environment values and argv words (`substitute`), shell-quoted
//! into a shell line (`substitute_shell`: the build line, a benchmark's `sh -c` script),
//! where each value stays one literal word whatever characters it holds. `${NAME}` is
//! shell syntax, not a placeholder, so a build line may use shell variables.

use serde::{Deserialize, Serialize};

/// The most variants a sweep may have (the product of the parameters' value counts).
pub const MAX_VARIANTS: usize = 512;

/// One swept parameter and its values, in the order given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    pub values: Vec<String>,
}

/// One point of the sweep: a value for every parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment(pub Vec<(String, String)>);

impl Assignment {
    /// "RING=16", "RING=16 OPT=O2".
    pub fn label(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        parts.join(" ")
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A parameter name: a letter or '_' then letters, digits and '_'.
pub fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `NAME=V1,V2,…`, `NAME=A..B` (step 1), `NAME=A..B:STEP` or `NAME=A..B:*F`;
/// the error says what was expected.
pub fn parse_parameter(spec: &str) -> Result<Parameter, String> {
    let (name, values) = spec
        .split_once('=')
        .ok_or("NAME=V1,V2,… or NAME=FIRST..LAST[:STEP]")?;
    let name = name.trim();
    if !is_name(name) {
        return Err(format!(
            "a parameter name of letters, digits and '_' before '=' (got '{name}')"
        ));
    }
    let values = values.trim();
    let list = if let Some((first, rest)) = values.split_once("..") {
        range(first, rest)?
    } else {
        values.split(',').map(|v| v.trim().to_string()).collect()
    };
    // Before the repeats are looked for: that check is quadratic in the values.
    if list.len() > MAX_VARIANTS {
        return Err(format!("at most {MAX_VARIANTS} values"));
    }
    if list.iter().any(String::is_empty) {
        return Err("values separated by commas, none of them empty".to_string());
    }
    // No shell word and no argv word can hold one (`substitute_shell` refuses it too).
    if let Some(v) = list.iter().find(|v| v.contains('\0')) {
        return Err(format!(
            "values without a NUL byte ('{}' cannot be shell-quoted or passed to a program)",
            v.escape_debug()
        ));
    }
    for (i, v) in list.iter().enumerate() {
        if list[..i].contains(v) {
            return Err(format!("each value once ('{v}' is repeated)"));
        }
    }
    Ok(Parameter {
        name: name.to_string(),
        values: list,
    })
}

/// `A..B`, `A..B:STEP` (arithmetic) or `A..B:*F` (geometric) over whole numbers, B
/// included when the steps reach it.
fn range(first: &str, rest: &str) -> Result<Vec<String>, String> {
    let expected = "a range FIRST..LAST[:STEP] or FIRST..LAST:*FACTOR of whole numbers with \
                    FIRST ≤ LAST, a step ≥ 1 and a factor ≥ 2";
    let number = |s: &str| s.trim().parse::<i64>().map_err(|_| expected.to_string());
    let (last, step) = match rest.split_once(':') {
        Some((last, step)) => (last, Some(step.trim())),
        None => (rest, None),
    };
    let (first, last) = (number(first)?, number(last)?);
    if first > last {
        return Err(expected.to_string());
    }
    let mut values = Vec::new();
    match step {
        Some(factor) if factor.starts_with('*') => {
            let factor = number(&factor[1..])?;
            if factor < 2 || first <= 0 {
                return Err(expected.to_string());
            }
            let mut v = first;
            while v <= last && values.len() <= MAX_VARIANTS {
                values.push(v.to_string());
                // A next value beyond i64 is beyond LAST too: the range ends here.
                match v.checked_mul(factor) {
                    Some(next) => v = next,
                    None => break,
                }
            }
        }
        step => {
            let step = step.map_or(Ok(1), number)?;
            if step < 1 {
                return Err(expected.to_string());
            }
            let mut v = first;
            while v <= last && values.len() <= MAX_VARIANTS {
                values.push(v.to_string());
                match v.checked_add(step) {
                    Some(next) => v = next,
                    None => break,
                }
            }
        }
    }
    if values.len() > MAX_VARIANTS {
        return Err(format!("at most {MAX_VARIANTS} values"));
    }
    Ok(values)
}

/// Every assignment of the parameters' values, the first parameter varying slowest.
pub fn product(parameters: &[Parameter]) -> Vec<Assignment> {
    let mut assignments = vec![Assignment(Vec::new())];
    for p in parameters {
        assignments = assignments
            .into_iter()
            .flat_map(|a| {
                p.values.iter().map(move |v| {
                    let mut next = a.0.clone();
                    next.push((p.name.clone(), v.clone()));
                    Assignment(next)
                })
            })
            .collect();
    }
    assignments
}

/// The names of the `{NAME}` placeholders in `text`, in order, repeats included; a
/// `${NAME}` (shell syntax) is not one.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(open) = text[i..].find('{').map(|o| o + i) {
        let Some(close) = text[open..].find('}').map(|c| c + open) else {
            break;
        };
        let name = &text[open + 1..close];
        let shell = open > 0 && bytes[open - 1] == b'$';
        if is_name(name) && !shell {
            names.push(name.to_string());
            i = close + 1;
        } else {
            i = open + 1;
        }
    }
    names
}

/// `text` with each `{NAME}` of the assignment replaced by its value; other braces are
/// left alone.
pub fn substitute(text: &str, assignment: &Assignment) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(open) = text[i..].find('{').map(|o| o + i) {
        out.push_str(&text[i..open]);
        let close = text[open..].find('}').map(|c| c + open);
        let shell = open > 0 && bytes[open - 1] == b'$';
        match close.and_then(|c| Some((c, assignment.value(&text[open + 1..c])?))) {
            Some((close, value)) if !shell => {
                out.push_str(value);
                i = close + 1;
            }
            _ => {
                out.push('{');
                i = open + 1;
            }
        }
    }
    out.push_str(&text[i..]);
    out
}

/// How a placeholder's value is quoted where it sits in a shell line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// Unquoted: the value becomes one shell word (`shlex::try_quote`).
    Word,
    /// Inside '…': each ' becomes '\'' (close, a backslashed quote, reopen).
    Single,
    /// Inside "…": \ " $ ` get a backslash.
    Double,
    /// Where memscope does not follow the shell's parsing (inside `…`, $(…), ${…}, a
    /// comment, after a here-document): only values that need no quoting go there.
    Unclear(&'static str),
}

/// Where the shell's parser is at a point of the line (memscope's simplified view).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Top,
    Single,
    Double,
    /// `$(…)` or `$((…))`, and parentheses inside them.
    Paren,
    /// `${…}`.
    Brace,
    Backtick,
    Comment,
}

/// `text`, a shell line, with each `{NAME}` of the assignment replaced by its value quoted
/// so that the shell reads it as exactly that text: unquoted, inside '…' or inside "…".
/// The error (a value with a NUL byte, or a value that needs quoting where memscope does
/// not follow the shell's parsing) names the value, the parameter and what to do.
pub(super) fn substitute_shell(text: &str, assignment: &Assignment) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut shell = ShellState {
        stack: vec![Context::Top],
        unclear: None,
        escaped: false,
    };
    let mut i = 0;
    while i < bytes.len() {
        // A placeholder, in any context: the same rule as `substitute`.
        if bytes[i] == b'{' && !(i > 0 && bytes[i - 1] == b'$') {
            if let Some((close, name, value)) = text[i..]
                .find('}')
                .map(|c| c + i)
                .and_then(|c| Some((c, &text[i + 1..c], assignment.value(&text[i + 1..c])?)))
            {
                out.push_str(&quote(value, name, shell.quoting())?);
                i = close + 1;
                shell.escaped = false;
                continue;
            }
        }
        let end = (i + shell.step(text, i)).min(bytes.len());
        // A backslash may escape a multi-byte character: copy up to the next boundary.
        let end = (end..=bytes.len())
            .find(|&e| text.is_char_boundary(e))
            .unwrap_or(bytes.len());
        out.push_str(&text[i..end]);
        i = end;
    }
    Ok(out)
}

/// Where the scan of a shell line is: the nested quoting contexts, why memscope can no
/// longer follow the line's quoting (set once, for the rest of it), and whether the byte
/// before is a backslash that escapes what follows (outside '…').
struct ShellState {
    stack: Vec<Context>,
    unclear: Option<&'static str>,
    escaped: bool,
}

impl ShellState {
    fn top(&self) -> Context {
        *self.stack.last().unwrap_or(&Context::Top)
    }

    /// How a value substituted here must be quoted.
    fn quoting(&self) -> Quoting {
        match (self.unclear, self.stack.as_slice()) {
            // A backslash would escape the value's opening quote.
            _ if self.escaped => Quoting::Unclear("right after a backslash"),
            (Some(why), _) => Quoting::Unclear(why),
            (None, [Context::Top]) => Quoting::Word,
            (None, [Context::Top, Context::Single]) => Quoting::Single,
            (None, [Context::Top, Context::Double]) => Quoting::Double,
            (None, _) => Quoting::Unclear(match self.top() {
                Context::Comment => "in a comment",
                Context::Backtick => "inside `…`",
                Context::Brace => "inside ${…}",
                _ => "inside $(…)",
            }),
        }
    }

    /// Reads the byte at `i` (and the one after where they go together): the contexts it
    /// opens or closes; how many bytes it takes.
    fn step(&mut self, text: &str, i: usize) -> usize {
        let bytes = text.as_bytes();
        let top = self.top();
        let (b, next) = (bytes[i], bytes.get(i + 1).copied());
        let word_start = i == 0 || b" \t\n;&|()<>".contains(&bytes[i - 1]);
        self.escaped = false;
        let mut step = 1;
        let stack = &mut self.stack;
        let mut unclear = |why| self.unclear = self.unclear.or(Some(why));
        match top {
            Context::Single if b == b'\'' => _ = stack.pop(),
            Context::Comment if b == b'\n' => _ = stack.pop(),
            Context::Single | Context::Comment => {}
            Context::Backtick => match b {
                b'\\' => (step, self.escaped) = escape(next),
                b'`' => _ = stack.pop(),
                _ => {}
            },
            Context::Double => match b {
                b'\\' => (step, self.escaped) = escape(next),
                b'"' => _ = stack.pop(),
                b'`' => stack.push(Context::Backtick),
                b'$' if next == Some(b'(') => step = opened(stack, Context::Paren),
                b'$' if next == Some(b'{') => step = opened(stack, Context::Brace),
                _ => {}
            },
            Context::Top | Context::Paren | Context::Brace => match b {
                b'\\' => (step, self.escaped) = escape(next),
                // Quotes inside ${…} mean different things inside and outside "…".
                b'\'' | b'"' if top == Context::Brace => unclear("after a quote inside ${…}"),
                b'\'' => stack.push(Context::Single),
                b'"' => stack.push(Context::Double),
                b'`' => stack.push(Context::Backtick),
                b'$' if next == Some(b'\'') => unclear("after $'…'"),
                b'$' if next == Some(b'(') => step = opened(stack, Context::Paren),
                b'$' if next == Some(b'{') => step = opened(stack, Context::Brace),
                b'<' if next == Some(b'<') && top != Context::Brace => {
                    unclear("after a here-document (<<)")
                }
                b'#' if word_start && top != Context::Brace => stack.push(Context::Comment),
                b'(' if top == Context::Paren => stack.push(Context::Paren),
                b')' if top == Context::Paren => _ = stack.pop(),
                b'}' if top == Context::Brace => _ = stack.pop(),
                // A pattern's unmatched ')' would end $(…) too early for memscope.
                b'c' if top == Context::Paren
                    && word_start
                    && text[i..].starts_with("case")
                    && bytes.get(i + 4).is_some_and(u8::is_ascii_whitespace) =>
                {
                    unclear("after a case inside $(…)")
                }
                _ => {}
            },
        }
        step
    }
}

/// `$(` or `${` opens `context`: its two bytes are read.
fn opened(stack: &mut Vec<Context>, context: Context) -> usize {
    stack.push(context);
    2
}

/// How far a backslash reaches: over the character it escapes, except the `{` of a
/// placeholder, which is then substituted right after the backslash (`escaped`).
fn escape(next: Option<u8>) -> (usize, bool) {
    match next {
        Some(b'{') => (1, true),
        _ => (2, false),
    }
}

/// `value` (of the parameter `name`) quoted for where it sits.
fn quote(value: &str, name: &str, quoting: Quoting) -> Result<String, String> {
    if value.contains('\0') {
        return Err(format!(
            "the value '{}' of {name} holds a NUL byte, which no shell word can hold",
            value.escape_debug()
        ));
    }
    Ok(match quoting {
        Quoting::Word => shlex::try_quote(value)
            .map_err(|e| format!("the value '{value}' of {name}: {e}"))?
            .into_owned(),
        Quoting::Single => value.replace('\'', "'\\''"),
        Quoting::Double => {
            let mut out = String::with_capacity(value.len());
            for c in value.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
        Quoting::Unclear(why) => match shlex::try_quote(value) {
            Ok(std::borrow::Cow::Borrowed(_)) => value.to_string(),
            _ => {
                return Err(format!(
                    "the value '{value}' of {name} needs shell quoting, but {{{name}}} sits \
                     {why}, where memscope does not follow the shell's quoting: set a \
                     variable first (V={{{name}}}; …) and use \"$V\" there"
                ))
            }
        },
    })
}

/// The index of the script word when `words` run a shell on a script (`sh -c SCRIPT`,
/// `bash -ec SCRIPT`, …): values substituted into it must be shell-quoted too.
pub(super) fn shell_script_word(words: &[String]) -> Option<usize> {
    const SHELLS: &[&str] = &["sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "busybox"];
    let program = words.first()?.rsplit('/').next()?;
    if !SHELLS.contains(&program) {
        return None;
    }
    let mut script = false;
    let mut i = 1;
    // busybox runs its applet: `busybox sh -c …`.
    if program == "busybox" {
        if words.get(1).map(String::as_str) != Some("sh") {
            return None;
        }
        i = 2;
    }
    while i < words.len() {
        let word = &words[i];
        if word == "--" || word == "-" {
            i += 1;
            break;
        }
        match word.as_bytes().first() {
            Some(b'-') | Some(b'+') => {
                script |= word[1..].contains('c');
                // -o OPTION / -O OPTION take the next word.
                if word[1..].ends_with(['o', 'O']) {
                    i += 1;
                }
                i += 1;
            }
            _ => break,
        }
    }
    (script && i < words.len()).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(spec: &str) -> Vec<String> {
        parse_parameter(spec).unwrap().values
    }

    #[test]
    fn lists_and_ranges_parse() {
        assert_eq!(values("RING=16,24, 32"), ["16", "24", "32"]);
        assert_eq!(values("RING=16..128:16").len(), 8);
        assert_eq!(values("RING=16..128:16")[7], "128");
        assert_eq!(values("N=1..3"), ["1", "2", "3"]);
        assert_eq!(values("KIB=4..64:*2"), ["4", "8", "16", "32", "64"]);
        assert_eq!(values("OPT=O2,O3,Os"), ["O2", "O3", "Os"]);
        assert_eq!(parse_parameter("_x1=a").unwrap().name, "_x1");
        for bad in [
            "RING",
            "1X=2",
            "A B=1",
            "R=",
            "R=1,,2",
            "R=1,1",
            "R=9..1",
            "R=1..8:0",
            "R=1..8:*1",
            "R=a..b",
            "R=0..8:*2",
            "R=1..100000",
        ] {
            assert!(parse_parameter(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn ranges_that_end_near_the_largest_number_keep_their_last_value() {
        // Found by tests/hostile_input.rs: the step after the last value overflowed i64,
        // and a valid range was refused.
        let max = i64::MAX;
        assert_eq!(values(&format!("N={max}..{max}")), [max.to_string()]);
        assert_eq!(values(&format!("N=315..315:{}", max - 314)), ["315"]);
        assert_eq!(values(&format!("N={}..{max}:2", max - 3)).len(), 2);
        let powers = values(&format!("N=1..{}:*2", max - 600));
        assert_eq!(powers.len(), 63);
        assert_eq!(powers[62], (1i64 << 62).to_string());
        assert_eq!(values(&format!("N={0}..{0}:*{0}", 1i64 << 62)).len(), 1);
        // A list longer than the cap is refused before its repeats are looked for.
        let long = (0..100_000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let e = parse_parameter(&format!("N={long}")).unwrap_err();
        assert!(e.contains("at most 512"), "{e}");
    }

    #[test]
    fn the_product_varies_the_last_parameter_fastest() {
        let a = parse_parameter("A=1,2").unwrap();
        let b = parse_parameter("B=x,y,z").unwrap();
        let labels: Vec<String> = product(&[a, b]).iter().map(Assignment::label).collect();
        assert_eq!(
            labels,
            ["A=1 B=x", "A=1 B=y", "A=1 B=z", "A=2 B=x", "A=2 B=y", "A=2 B=z"]
        );
        assert_eq!(product(&[]).len(), 1);
    }

    #[test]
    fn placeholders_are_found_and_substituted_but_not_shell_variables() {
        let text = "make RING_CAP={RING} CFLAGS=${CFLAGS} {not a name} {OPT}{RING}";
        assert_eq!(placeholders(text), ["RING", "OPT", "RING"]);
        let a = Assignment(vec![
            ("RING".into(), "32".into()),
            ("OPT".into(), "O3".into()),
        ]);
        assert_eq!(
            substitute(text, &a),
            "make RING_CAP=32 CFLAGS=${CFLAGS} {not a name} O332"
        );
        assert_eq!(substitute("{UNSET} {", &a), "{UNSET} {");
        assert!(placeholders("awk '{print $1}'").is_empty());
    }

    fn one(name: &str, value: &str) -> Assignment {
        Assignment(vec![(name.into(), value.into())])
    }

    /// Runs `line` by `sh -c` in `dir`; its standard output.
    fn run(line: &str, dir: &std::path::Path) -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn a_value_is_one_quoted_word_and_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let pwned = dir.path().join("pwned");
        let value = format!("a;touch {}", pwned.display());
        let line = substitute_shell("echo {X}", &one("X", &value)).unwrap();
        assert_eq!(line, format!("echo '{value}'"));
        assert_eq!(run(&line, dir.path()), format!("{value}\n"));
        assert!(!pwned.exists());
        // Values that need no quoting are pasted as they are, in any context.
        assert_eq!(
            substitute_shell(
                "cc -DK={K} '{K}' \"{K}\" $(echo {K}) # {K}",
                &one("K", "16")
            )
            .unwrap(),
            "cc -DK=16 '16' \"16\" $(echo 16) # 16"
        );
        // A value with a space is one word: a flag list is split by the shell only where
        // the line asks for it, through a variable.
        let flags = one("F", "-O2 -march=native");
        assert_eq!(
            run(
                &substitute_shell("printf '<%s>' {F}", &flags).unwrap(),
                dir.path()
            ),
            "<-O2 -march=native>"
        );
        assert_eq!(
            run(
                &substitute_shell("f={F}; printf '<%s>' $f", &flags).unwrap(),
                dir.path()
            ),
            "<-O2><-march=native>"
        );
    }

    #[test]
    fn hostile_values_stay_literal_unquoted_and_inside_quotes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pwned");
        let p = p.display();
        let values = [
            format!("a;touch {p}"),
            format!("$(touch {p})"),
            format!("`touch {p}`"),
            format!("'; touch {p}; '"),
            format!("\"; touch {p}; \""),
            format!("x\ntouch {p}\n"),
            format!("\\'; touch {p} #"),
            format!("\\\"; touch {p} #"),
            "$HOME ~ * ? [a] {Y} ${X} %s é\t!".to_string(),
            "\\".to_string(),
            "'".to_string(),
            "\"".to_string(),
            "a'b\"c\\d$e`f".to_string(),
        ];
        // printf prints each argument between <>: the value must arrive as one literal
        // argument (or as literal text inside the template's own quotes).
        for template in [
            "printf '<%s>' {X}",
            "printf '<%s>' pre{X}post",
            "printf '<%s>' '{X}'",
            "printf '<%s>' 'a {X} b'",
            "printf '<%s>' \"{X}\"",
            "printf '<%s>' \"a {X} $(echo b)\"",
            "( printf '<%s>' {X} ) && printf '<%s>' \"{X}\" '{X}'",
        ] {
            for value in &values {
                let line = substitute_shell(template, &one("X", value)).unwrap();
                let want = substitute(template, &one("X", "VALUE"));
                let want = run(&want, dir.path()).replace("VALUE", value);
                assert_eq!(
                    run(&line, dir.path()),
                    want,
                    "{template} with {value:?}: {line}"
                );
                assert!(!dir.path().join("pwned").exists(), "{line}");
            }
        }
    }

    #[test]
    fn values_that_need_quoting_where_memscope_cannot_follow_are_refused() {
        let spaced = one("X", "a b");
        for (template, why) in [
            ("echo $(echo {X})", "inside $(…)"),
            ("echo \"$(echo {X})\"", "inside $(…)"),
            ("echo `echo {X}`", "inside `…`"),
            ("echo ${V:-{X}}", "inside ${…}"),
            ("echo hi # {X}", "in a comment"),
            ("cat <<EOF\n{X}\nEOF", "here-document"),
            ("echo \\{X}", "right after a backslash"),
            ("echo $'x' {X}", "after $'…'"),
            ("x=$(case a in a) echo;; esac) \"{X}\"", "case"),
        ] {
            let e = substitute_shell(template, &spaced).unwrap_err();
            assert!(
                e.contains("'a b' of X") && e.contains(why),
                "{template}: {e}"
            );
            // A value that needs no quoting goes anywhere.
            assert!(
                substitute_shell(template, &one("X", "16")).is_ok(),
                "{template}"
            );
        }
        // Quoting is followed past these: a quote inside $(…) or `…` ends there.
        let line = substitute_shell("echo \"$(echo ')')\" {X} `echo \\`` '{X}'", &spaced).unwrap();
        assert_eq!(line, "echo \"$(echo ')')\" 'a b' `echo \\`` 'a b'");
        let e = substitute_shell("echo {X}", &one("X", "a\0b")).unwrap_err();
        assert!(e.contains("NUL") && e.contains("of X"), "{e}");
        let e = parse_parameter("X=a\0b,c").unwrap_err();
        assert!(e.contains("NUL"), "{e}");
    }

    #[test]
    fn a_shell_script_word_is_found_after_the_shells_options() {
        let words = |s: &str| shlex::split(s).unwrap();
        assert_eq!(shell_script_word(&words("sh -c 'exit {N}'")), Some(2));
        assert_eq!(shell_script_word(&words("/bin/bash -e -c 'x'")), Some(3));
        assert_eq!(shell_script_word(&words("bash -ec 'x' name arg")), Some(2));
        assert_eq!(
            shell_script_word(&words("bash -o pipefail -c 'x'")),
            Some(4)
        );
        assert_eq!(shell_script_word(&words("busybox sh -c 'x'")), Some(3));
        assert_eq!(shell_script_word(&words("sh script.sh {N}")), None);
        assert_eq!(shell_script_word(&words("sh -e script.sh")), None);
        assert_eq!(shell_script_word(&words("sh -c")), None);
        assert_eq!(shell_script_word(&words("./bench -c {N}")), None);
        assert_eq!(shell_script_word(&words("busybox ls -c")), None);
    }
}
