//! Sweep parameters and `{NAME}` placeholders: parsing `-p NAME=V1,V2,…` and
//! `-p NAME=A..B:STEP` (or `:*F` for a geometric range), the product of several
//! parameters, finding the placeholders a text uses and substituting a variant's values.
//! `${NAME}` is shell syntax, not a placeholder, so a build line may use shell variables.

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
}
