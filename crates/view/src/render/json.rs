//! JSON exporter: any of memscope's documents (a report, a comparison, a history listing)
//! as it serialises, pretty-printed (see docs/DESIGN.md, "Output contract"): the model's
//! serde layout is the JSON's.

/// `document` pretty-printed, with a final newline.
pub fn to_bytes<T: serde::Serialize>(document: &T) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec_pretty(document).expect("memscope's documents always serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_pretty_printed_with_a_final_newline() {
        #[derive(serde::Serialize)]
        struct Doc {
            name: &'static str,
            sizes: Vec<u64>,
        }
        let text = String::from_utf8(to_bytes(&Doc {
            name: "a\"b",
            sizes: vec![1, 2],
        }))
        .unwrap();
        assert_eq!(
            text,
            "{\n  \"name\": \"a\\\"b\",\n  \"sizes\": [\n    1,\n    2\n  ]\n}\n"
        );
    }
}
