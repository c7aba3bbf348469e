//! `memscope footprint` through the real binary: the TLS size of the shipped C example
//! follows RING_CAP exactly as its struct layout says (and as readelf shows, where
//! binutils is installed); other binaries read; bad input is exit 2.

use serde_json::Value;

use crate::util::{memscope, temp_dir};

fn footprint(args: &[&str]) -> Value {
    let mut all = vec!["footprint"];
    all.extend(args);
    all.extend(["--json", "-"]);
    let out = memscope(&all)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("one JSON document")
}

/// Builds examples/ring_cap.c with RING_CAP; None (and a message) without a C compiler.
fn ring_cap(dir: &std::path::Path, cap: u64) -> Option<std::path::PathBuf> {
    let out = dir.join(format!("ring{cap}"));
    let status = std::process::Command::new("cc")
        .args(["-g", "-O1", "-pthread", &format!("-DRING_CAP={cap}")])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ring_cap.c"))
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        _ => {
            eprintln!("no C compiler: the RING_CAP example is not built");
            None
        }
    }
}

/// PT_TLS MemSiz as readelf prints it, where binutils is installed.
fn readelf_tls(path: &std::path::Path) -> Option<u64> {
    let out = std::process::Command::new("readelf")
        .arg("-lW")
        .arg(path)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text.lines().find(|l| l.trim_start().starts_with("TLS"))?;
    let memsz = line.split_whitespace().nth(5)?;
    u64::from_str_radix(memsz.trim_start_matches("0x"), 16).ok()
}

#[test]
fn the_tls_block_follows_ring_cap_as_the_struct_layout_says() {
    let dir = temp_dir();
    let mut sizes = Vec::new();
    for cap in [16u64, 64] {
        let Some(binary) = ring_cap(dir.path(), cap) else {
            return;
        };
        let json = footprint(&[binary.to_str().unwrap(), "--threads", "2"]);
        let f = &json["footprint"];
        let tls = f["tls"]["bytes"].as_u64().unwrap();
        // struct ring: RING_CAP pointers + two shorts, padded to 8; struct tcache: 7 rings,
        // an unsigned long and a char, padded to 8.
        let expected = 7 * (8 * cap + 8) + 16;
        assert_eq!(tls, expected, "RING_CAP {cap}");
        let tcache = f["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "tcache")
            .expect("the tcache TLS object");
        assert_eq!(tcache["bytes"].as_u64(), Some(expected));
        assert_eq!(tcache["lines"].as_u64(), Some(expected.div_ceil(64)));
        if let Some(readelf) = readelf_tls(&binary) {
            assert_eq!(readelf, tls, "readelf -lW PT_TLS MemSiz");
        }
        sizes.push(tls);
    }
    assert_eq!(sizes[1] - sizes[0], 7 * 48 * 8);
}

#[test]
fn real_binaries_read_with_or_without_tls() {
    let own = footprint(&[env!("CARGO_BIN_EXE_memscope"), "--top", "3"]);
    assert!(own["footprint"]["tls"]["bytes"].as_u64().unwrap() > 0);
    assert!(!own["footprint"]["objects"].as_array().unwrap().is_empty());
    for system in ["/bin/ls", "/usr/bin/ls"] {
        if std::path::Path::new(system).exists() {
            let json = footprint(&[system]);
            assert!(json["footprint"]["detail"].as_str().is_some());
            break;
        }
    }
}

#[test]
fn a_running_process_shows_its_mappings() {
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = sleeper.id().to_string();
    let json = footprint(&["--pid", &pid]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let process = &json["footprint"]["process"];
    assert_eq!(process["pid"].as_u64().unwrap().to_string(), pid);
    let mappings = process["mappings"].as_array().unwrap();
    assert!(mappings.iter().any(|m| m["name"] == "[stack]"), "{process}");
    memscope(&["footprint", "--pid", "999999999"])
        .assert()
        .code(2);
}

#[test]
fn what_cannot_be_read_is_exit_2() {
    let dir = temp_dir();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a binary").unwrap();
    let own = std::fs::read(env!("CARGO_BIN_EXE_memscope")).unwrap();
    let truncated = dir.path().join("truncated");
    std::fs::write(&truncated, &own[..100]).unwrap();
    let report = dir.path().join("report.json");
    std::fs::write(&report, "{}").unwrap();
    for (args, names) in [
        (
            vec!["footprint", "/nonexistent/binary"],
            "/nonexistent/binary",
        ),
        (vec!["footprint", text.to_str().unwrap()], "not an ELF file"),
        (vec!["footprint", truncated.to_str().unwrap()], "truncated"),
        (
            vec![
                "footprint",
                env!("CARGO_BIN_EXE_memscope"),
                "--threads",
                "0",
            ],
            "--threads",
        ),
        (
            vec![
                "footprint",
                env!("CARGO_BIN_EXE_memscope"),
                "--against",
                report.to_str().unwrap(),
            ],
            "memscope JSON report",
        ),
    ] {
        let out = memscope(&args).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
