//! `memscope footprint` through the real binary: the TLS size of the shipped C example
//! follows RING_CAP exactly as its struct layout says (and as readelf shows, where
//! binutils is installed); a stripped build finds its DWARF in a separate debug file by
//! `.gnu_debuglink` (CRC checked) and by build-id; a TLS pointer shows its pointee;
//! sweep names the objects whose size differs between variants; other binaries read; bad
//! input is exit 2.

use serde_json::Value;

use crate::util::{memscope, sweep_in, temp_dir};

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

/// `objcopy ARGS`; false (and a message) when objcopy is missing or fails.
fn objcopy(args: &[&std::ffi::OsStr]) -> bool {
    match std::process::Command::new("objcopy").args(args).status() {
        Ok(s) if s.success() => true,
        Ok(s) => panic!("objcopy {args:?}: {s}"),
        Err(_) => {
            eprintln!("skipped: no objcopy (binutils): separate debug files are not made");
            false
        }
    }
}

/// ring_cap built with -g and a build-id, its DWARF and symbols moved to `NAME.debug`
/// (`objcopy --only-keep-debug`) and the binary stripped; with `link`, the binary also
/// gets a `.gnu_debuglink` to the debug file. None when cc or objcopy is missing.
fn split_debug(
    dir: &std::path::Path,
    link: bool,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let out = dir.join("ring");
    let status = std::process::Command::new("cc")
        .args(["-g", "-O1", "-pthread", "-Wl,--build-id", "-DRING_CAP=16"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ring_cap.c"))
        .arg("-o")
        .arg(&out)
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("skipped: no C compiler: the RING_CAP example is not built");
        return None;
    }
    let debug = dir.join("ring.debug");
    if !objcopy(&["--only-keep-debug".as_ref(), out.as_ref(), debug.as_ref()]) {
        return None;
    }
    if !objcopy(&["--strip-all".as_ref(), out.as_ref()]) {
        return None;
    }
    if link {
        let arg = format!("--add-gnu-debuglink={}", debug.display());
        if !objcopy(&[arg.as_ref(), out.as_ref()]) {
            return None;
        }
    }
    Some((out, debug))
}

fn tcache_bytes(f: &Value) -> Option<u64> {
    f["objects"]
        .as_array()?
        .iter()
        .find(|o| o["name"] == "tcache")?
        .get("bytes")?
        .as_u64()
}

#[test]
fn a_stripped_binary_reads_its_debug_file_by_gnu_debuglink() {
    let dir = temp_dir();
    let Some((binary, debug)) = split_debug(dir.path(), true) else {
        return;
    };
    // An empty debug root: only the places beside the binary can match.
    let root = dir.path().join("no-debug-root");
    std::fs::create_dir(&root).unwrap();
    let args = |b: &std::path::Path| {
        footprint(&[b.to_str().unwrap(), "--debug-dir", root.to_str().unwrap()])
    };
    // Beside the binary.
    let json = args(&binary);
    let f = &json["footprint"];
    assert_eq!(f["debug_file"]["path"], debug.to_str().unwrap(), "{f}");
    assert_eq!(f["debug_file"]["found_by"], "gnu_debuglink");
    assert!(f["detail"].as_str().unwrap().starts_with("DWARF"), "{f}");
    let expected = 7 * (8 * 16 + 8) + 16;
    assert_eq!(tcache_bytes(f), Some(expected));
    let tcache = f["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "tcache")
        .unwrap();
    assert_eq!(tcache["type_name"], "struct tcache");
    // In the .debug/ subdirectory, named in the terminal output too.
    let sub = dir.path().join(".debug");
    std::fs::create_dir(&sub).unwrap();
    let moved = sub.join("ring.debug");
    std::fs::rename(&debug, &moved).unwrap();
    let out = memscope(&[
        "footprint",
        binary.to_str().unwrap(),
        "--debug-dir",
        root.to_str().unwrap(),
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("separate debug file"), "{text}");
    assert!(text.contains(".debug/ring.debug"), "{text}");
    // A file of that name whose CRC differs is not used, and the note says why.
    std::fs::remove_file(&moved).unwrap();
    // (a valid ELF file: the stripped binary itself)
    std::fs::copy(&binary, &debug).unwrap();
    let json = args(&binary);
    let f = &json["footprint"];
    assert!(f.get("debug_file").is_none(), "{f}");
    assert_eq!(
        tcache_bytes(f),
        None,
        "no symbols without the debug file: {f}"
    );
    let notes = f["notes"].to_string();
    assert!(
        notes.contains("ring.debug") && notes.contains("CRC32") && notes.contains("none matched"),
        "{notes}"
    );
}

#[test]
fn a_stripped_binary_reads_its_debug_file_by_build_id() {
    let dir = temp_dir();
    let Some((binary, debug)) = split_debug(dir.path(), false) else {
        return;
    };
    let data = std::fs::read(&binary).unwrap();
    let links = memscope::binary::debuginfo::Links::of(&data);
    let Some(id) = links.build_id else {
        eprintln!("skipped: the linker wrote no build-id");
        return;
    };
    assert!(links.debuglink.is_none());
    let root = dir.path().join("debug-root");
    let place = memscope::binary::debuginfo::build_id_path(&root, &id);
    std::fs::create_dir_all(place.parent().unwrap()).unwrap();
    std::fs::rename(&debug, &place).unwrap();
    let json = footprint(&[
        binary.to_str().unwrap(),
        "--debug-dir",
        root.to_str().unwrap(),
    ]);
    let f = &json["footprint"];
    assert_eq!(f["debug_file"]["path"], place.to_str().unwrap(), "{f}");
    assert_eq!(f["debug_file"]["found_by"], "build_id");
    assert_eq!(tcache_bytes(f), Some(7 * (8 * 16 + 8) + 16));
    // Another build's debug file at that place (a different build-id) is refused.
    let other_debug = {
        let sub = dir.path().join("other");
        std::fs::create_dir(&sub).unwrap();
        let status = std::process::Command::new("cc")
            .args(["-g", "-O0", "-Wl,--build-id", "-x", "c", "-", "-o"])
            .arg(sub.join("other"))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(b"int main(void){return 0;}\n")?;
                c.wait()
            })
            .unwrap();
        assert!(status.success());
        let debug = sub.join("other.debug");
        assert!(objcopy(&[
            "--only-keep-debug".as_ref(),
            sub.join("other").as_ref(),
            debug.as_ref()
        ]));
        debug
    };
    std::fs::rename(&other_debug, &place).unwrap();
    let json = footprint(&[
        binary.to_str().unwrap(),
        "--debug-dir",
        root.to_str().unwrap(),
    ]);
    let f = &json["footprint"];
    assert!(f.get("debug_file").is_none(), "{f}");
    assert!(f["notes"].to_string().contains("build-id differs"), "{f}");
}

/// A thread-local pointer to a struct shows the struct as per-thread data outside the
/// TLS block (mimalloc's `_mi_heap_default → mi_heap_t`).
#[test]
fn a_tls_pointer_shows_its_pointee_outside_the_tls_block() {
    let dir = temp_dir();
    let src = dir.path().join("heap.c");
    std::fs::write(
        &src,
        "typedef struct heap_s { void *pages[100]; long used; } heap_t;\n\
         static heap_t heap_main;\n\
         __thread heap_t *heap_default = &heap_main;\n\
         int main(void) { return (int)heap_default->used; }\n",
    )
    .unwrap();
    let out = dir.path().join("heap");
    let status = std::process::Command::new("cc")
        .args(["-g", "-O0"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("skipped: no C compiler");
        return;
    }
    let json = footprint(&[out.to_str().unwrap(), "--threads", "2"]);
    let f = &json["footprint"];
    assert_eq!(f["tls"]["bytes"].as_u64(), Some(8), "{f}");
    assert_eq!(f["tls_pointee_bytes"].as_u64(), Some(808), "{f}");
    let heap = f["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "heap_default")
        .unwrap();
    assert_eq!(heap["bytes"].as_u64(), Some(8));
    assert_eq!(heap["pointee"]["type_name"], "heap_t");
    assert_eq!(heap["pointee"]["size"].as_u64(), Some(808));
    let text = memscope(&["footprint", out.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("→ heap_t (struct heap_s), 808 B"), "{text}");
    assert!(text.contains("not in the TLS block"), "{text}");
}

/// A sweep of a knob that sizes a static struct and a TLS pointer's pointee names both,
/// and only them, with each variant's size.
#[test]
fn sweep_names_the_objects_whose_size_differs() {
    let dir = temp_dir();
    std::fs::write(
        dir.path().join("heap.c"),
        "#ifndef SLOTS\n#define SLOTS 8\n#endif\n\
         typedef struct heap_s { void *pages[SLOTS]; long used; } heap_t;\n\
         static heap_t heap_main;\n\
         static char same[4096];\n\
         __thread heap_t *heap_default = &heap_main;\n\
         int main(void) { return (int)heap_default->used + same[0]; }\n",
    )
    .unwrap();
    let probe = std::process::Command::new("cc").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: no C compiler");
        return;
    }
    let out = sweep_in(
        dir.path(),
        &[
            "-p",
            "SLOTS=8,64",
            "--build",
            "cc -g -O0 -DSLOTS={SLOTS} heap.c -o heap",
            "--keep",
            "heap",
            "--runs",
            "2",
            "--json",
            "-",
            "./heap",
        ],
    )
    .assert()
    .get_output()
    .clone();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let variants = json["sweep"]["variants"].as_array().unwrap();
    for (v, slots) in [(0, 8u64), (1, 64)] {
        let f = &variants[v]["footprint"];
        let size = 8 * slots + 8;
        assert_eq!(f["tls_pointee_bytes"].as_u64(), Some(size), "{f}");
        let differing = f["differing"].as_array().unwrap();
        let find = |name: &str| differing.iter().find(|o| o["name"] == name);
        assert_eq!(find("heap_main").unwrap()["bytes"].as_u64(), Some(size));
        let pointer = find("heap_default").unwrap();
        assert_eq!(pointer["bytes"].as_u64(), Some(8));
        assert_eq!(pointer["pointee_bytes"].as_u64(), Some(size));
        assert!(find("same").is_none(), "{differing:?}");
    }
}
