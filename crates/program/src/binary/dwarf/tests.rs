//! Tests: small C programs compiled with the system `cc`, read back through `variables`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{variables, Layout, Variable};

const PROGRAM: &str = r#"
#include <stddef.h>
#define RING_CAP 16

struct tcache {
    char tag;
    long count;
    int flags;
};

struct entry {
    int key;
    short kind;
};

struct bits {
    unsigned int ready : 1;
    unsigned int level : 3;
    char c;
    unsigned int wide : 20;
};

typedef unsigned long counter_t;

__thread struct tcache tcache;
__thread void *ring[7][RING_CAP];
static struct entry table[5];
struct bits flags_word;
counter_t hits = 3;
const char *const banner = "x";
size_t total;

int main(void) {
    static int calls;
    calls++;
    table[0].key = calls;
    tcache.count = (long)ring[0][0] + (long)hits + (long)total + flags_word.level + banner[0];
    return 0;
}
"#;

/// The system C compiler, or None (the test is skipped) when there is none.
fn cc() -> Option<&'static str> {
    for name in ["cc", "gcc", "clang"] {
        if Command::new(name).arg("--version").output().is_ok() {
            return Some(name);
        }
    }
    eprintln!("skipped: no C compiler (cc) found");
    None
}

/// Compiles `source` with `args` in `dir`, returning the output file.
fn compile(cc: &str, dir: &Path, source: &str, args: &[&str], out: &str) -> PathBuf {
    let src = dir.join("prog.c");
    std::fs::write(&src, source).unwrap();
    let out = dir.join(out);
    let status = Command::new(cc)
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "{cc} {args:?} failed");
    out
}

fn find<'a>(vars: &'a [Variable], name: &str) -> &'a Variable {
    vars.iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variable {name} in {vars:#?}"))
}

fn check_program(vars: &[Variable]) {
    let tcache = find(vars, "tcache");
    assert!(tcache.tls);
    assert_eq!(tcache.type_name, "struct tcache");
    assert_eq!(tcache.size, 24);
    assert!(tcache.dimensions.is_empty());
    let layout: &Layout = tcache.layout.as_ref().unwrap();
    assert_eq!(layout.name, "struct tcache");
    assert_eq!(layout.size, 24);
    let offsets: Vec<(&str, u64, u64)> = layout
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.offset, m.size))
        .collect();
    assert_eq!(offsets, [("tag", 0, 1), ("count", 8, 8), ("flags", 16, 4)]);
    // gcc names the base type "long int", clang "long".
    assert!(["long", "long int"].contains(&layout.members[1].type_name.as_str()));
    assert_eq!(layout.holes, [(1, 7)]);
    assert_eq!(layout.padding, 4);

    let ring = find(vars, "ring");
    assert!(ring.tls);
    assert_eq!(ring.type_name, "void *[7][16]");
    assert_eq!(ring.size, 7 * 16 * 8);
    assert_eq!(ring.dimensions, [(7, None), (16, None)]);
    assert!(ring.layout.is_none());
    // Both TLS variables have offsets in the TLS block, and they do not overlap.
    let (a, b) = (tcache.address.unwrap(), ring.address.unwrap());
    assert!(a + tcache.size <= b || b + ring.size <= a, "{a} {b}");

    let table = find(vars, "table");
    assert!(!table.tls);
    assert_eq!(table.type_name, "struct entry[5]");
    assert_eq!(table.size, 40);
    assert_eq!(table.dimensions, [(5, None)]);
    let layout = table.layout.as_ref().unwrap();
    assert_eq!(layout.name, "struct entry");
    assert_eq!(layout.size, 8);
    assert!(layout.holes.is_empty());
    assert_eq!(layout.padding, 2);

    let bits = find(vars, "flags_word").layout.as_ref().unwrap();
    assert_eq!(bits.size, 8);
    let members: Vec<_> = bits
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.offset, m.size, m.bits))
        .collect();
    assert_eq!(
        members,
        [
            ("ready", 0, 4, Some((1, 0))),
            ("level", 0, 4, Some((3, 1))),
            ("c", 1, 1, None),
            // 20 bits do not fit in bits 16..32 of the first unsigned int: the next one.
            ("wide", 4, 4, Some((20, 0))),
        ]
    );
    assert!(bits.holes.is_empty());
    assert_eq!(bits.padding, 0);

    let hits = find(vars, "hits");
    assert_eq!(hits.type_name, "counter_t");
    assert_eq!(hits.size, 8);
    assert!(hits.layout.is_none());
    let total = find(vars, "total");
    assert_eq!(total.type_name, "size_t");
    assert_eq!(total.size, 8);
    let banner = find(vars, "banner");
    assert_eq!(banner.type_name, "const char * const");
    assert_eq!(banner.size, 8);
    let calls = find(vars, "calls");
    assert_eq!(calls.type_name, "int");
    assert_eq!(calls.size, 4);
    assert!(!calls.tls);
    // Only static storage: no stack variables.
    assert!(vars.iter().all(|v| v.tls || v.address.is_some()));
}

#[test]
fn footprint_dwarf_executable_dwarf5_and_4() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    for version in ["-gdwarf-5", "-gdwarf-4"] {
        let exe = compile(cc, dir.path(), PROGRAM, &["-g", version, "-O0"], "prog");
        let vars = variables(&std::fs::read(&exe).unwrap()).unwrap();
        check_program(&vars);
        // Static addresses are in the executable's address range (nonzero).
        assert!(find(&vars, "table").address.unwrap() > 0);
    }
}

#[test]
fn footprint_dwarf_relocatable_object() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let obj = compile(cc, dir.path(), PROGRAM, &["-g", "-O0", "-c"], "prog.o");
    let vars = variables(&std::fs::read(&obj).unwrap()).unwrap();
    check_program(&vars);
}

#[test]
fn footprint_dwarf_compressed_sections() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("probe.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let probe = Command::new(cc)
        .args(["-g", "-gz", "-o"])
        .arg(dir.path().join("probe"))
        .arg(&src)
        .status();
    if !matches!(probe, Ok(s) if s.success()) {
        eprintln!("skipped: {cc} does not support -gz");
        return;
    }
    let exe = compile(cc, dir.path(), PROGRAM, &["-g", "-gz", "-O0"], "prog");
    let vars = variables(&std::fs::read(&exe).unwrap()).unwrap();
    check_program(&vars);
}

/// A TLS pointer to a struct (through a typedef, as mimalloc's `_mi_heap_default`) has a
/// pointee with the struct's size and layout; a pointer to void, to a base type or to an
/// incomplete struct has none.
#[test]
fn footprint_dwarf_pointers_to_structs_have_a_pointee() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = r#"
        typedef struct heap_s { void *pages[40]; long used; char owner; } heap_t;
        struct opaque;
        __thread heap_t *heap_default;
        __thread const struct heap_s *const_heap;
        __thread void *any;
        __thread long *number;
        __thread struct opaque *hidden;
        heap_t heap_main;
        int main(void) {
            heap_default = &heap_main;
            const_heap = &heap_main;
            return (int)(long)any + (int)(long)number + (int)(long)hidden;
        }
    "#;
    let exe = compile(cc, dir.path(), source, &["-g", "-O0"], "prog");
    let vars = variables(&std::fs::read(&exe).unwrap()).unwrap();
    let heap = find(&vars, "heap_default");
    assert_eq!(heap.size, 8);
    let pointee = heap.pointee.as_ref().expect("heap_default's pointee");
    assert_eq!(pointee.type_name, "heap_t");
    assert_eq!(pointee.size, 40 * 8 + 8 + 8);
    let layout = pointee.layout.as_ref().unwrap();
    assert_eq!(layout.name, "struct heap_s");
    assert_eq!(layout.members.len(), 3);
    assert_eq!(layout.padding, 7);
    let const_heap = find(&vars, "const_heap").pointee.as_ref().unwrap();
    assert_eq!(const_heap.type_name, "const struct heap_s");
    assert_eq!(const_heap.size, pointee.size);
    for none in ["any", "number", "hidden", "heap_main"] {
        assert!(find(&vars, none).pointee.is_none(), "{none}");
    }
}

#[test]
fn footprint_dwarf_not_an_elf_is_an_error() {
    let err = variables(b"not an elf").unwrap_err();
    assert!(err.ends_with('.'), "{err}");
}

#[test]
fn footprint_dwarf_no_debug_info_is_empty() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(cc, dir.path(), PROGRAM, &["-O0", "-g0"], "prog");
    assert_eq!(variables(&std::fs::read(&exe).unwrap()).unwrap(), vec![]);
}

#[test]
fn footprint_dwarf_dedups_across_units() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let header = "struct pair { char a; double b; };\nextern struct pair shared;\n";
    std::fs::write(
        dir.path().join("a.c"),
        format!("{header}struct pair shared;\nint main(void) {{ return (int)shared.b; }}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.c"),
        format!("{header}double get(void) {{ return shared.b; }}\n"),
    )
    .unwrap();
    let exe = dir.path().join("ab");
    let status = Command::new(cc)
        .args(["-g", "-O0", "-o"])
        .arg(&exe)
        .arg(dir.path().join("a.c"))
        .arg(dir.path().join("b.c"))
        .status()
        .unwrap();
    assert!(status.success());
    let vars = variables(&std::fs::read(&exe).unwrap()).unwrap();
    assert_eq!(vars.iter().filter(|v| v.name == "shared").count(), 1);
    let layout = find(&vars, "shared").layout.as_ref().unwrap();
    assert_eq!(layout.holes, [(1, 7)]);
    assert_eq!(layout.padding, 0);
}

#[test]
fn footprint_dwarf_matches_pahole() {
    let Some(cc) = cc() else { return };
    if Command::new("pahole").arg("--version").output().is_err() {
        eprintln!("skipped: pahole is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(cc, dir.path(), PROGRAM, &["-g", "-O0"], "prog");
    let vars = variables(&std::fs::read(&exe).unwrap()).unwrap();
    let layout = find(&vars, "tcache").layout.clone().unwrap();
    let out = Command::new("pahole")
        .args(["-C", "tcache"])
        .arg(&exe)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("/* size: {},", layout.size)),
        "{text}"
    );
    for (offset, bytes) in &layout.holes {
        let _ = offset;
        assert!(
            text.contains(&format!("/* XXX {bytes} bytes hole")),
            "{text}"
        );
    }
    assert!(
        layout.padding == 0 || text.contains(&format!("/* padding: {} */", layout.padding)),
        "{text}"
    );
}

#[test]
fn footprint_dwarf_c_type_names() {
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = r#"
enum colour { RED, GREEN };
union number { int i; double d; };
int (*handler)(int, char *);
void (*callbacks[3])(void);
int (*row)[4];
volatile int ticks;
enum colour paint;
union number value;
struct { char c; int n; } anon;
const int limits[2][3];
int main(void) { return ticks; }
"#;
    let exe = compile(cc, dir.path(), source, &["-g", "-O0"], "prog");
    let vars = variables(&std::fs::read(&exe).unwrap()).unwrap();
    let name = |n: &str| find(&vars, n).type_name.clone();
    assert_eq!(name("handler"), "int (*)(int, char *)");
    assert_eq!(name("callbacks"), "void (*[3])(void)");
    assert_eq!(name("row"), "int (*)[4]");
    assert_eq!(name("ticks"), "volatile int");
    assert_eq!(name("paint"), "enum colour");
    assert_eq!(name("value"), "union number");
    assert_eq!(name("anon"), "struct {...}");
    assert_eq!(name("limits"), "const int[2][3]");
    assert_eq!(find(&vars, "callbacks").size, 24);
    assert_eq!(find(&vars, "limits").size, 24);
    assert_eq!(find(&vars, "limits").dimensions, [(2, None), (3, None)]);
    let union = find(&vars, "value").layout.as_ref().unwrap();
    assert_eq!(union.size, 8);
    assert!(union.holes.is_empty());
    assert_eq!(union.padding, 0);
    let anon = find(&vars, "anon").layout.as_ref().unwrap();
    assert_eq!(anon.holes, [(1, 3)]);
}

/// Hand-written DWARF with every number a struct layout adds up at its extreme (member
/// offsets, sizes, bit offsets and widths of 2^64 - 1), an array whose bounds wrap, and a
/// function type that is its own return and parameter types.
const HOSTILE_DWARF: &str = r#"
    .section .debug_abbrev,"",%progbits
    .uleb128 1, 0x11
    .byte 1
    .uleb128 0x03, 0x08
    .byte 0, 0
    .uleb128 2, 0x34
    .byte 0
    .uleb128 0x03, 0x08, 0x49, 0x13, 0x02, 0x18
    .byte 0, 0
    .uleb128 3, 0x13
    .byte 1
    .uleb128 0x03, 0x08, 0x0b, 0x0f
    .byte 0, 0
    .uleb128 4, 0x0d
    .byte 0
    .uleb128 0x03, 0x08, 0x49, 0x13, 0x38, 0x0f, 0x0d, 0x0f, 0x0c, 0x0f, 0x0b, 0x0f
    .byte 0, 0
    .uleb128 5, 0x0d
    .byte 0
    .uleb128 0x03, 0x08, 0x49, 0x13, 0x38, 0x18
    .byte 0, 0
    .uleb128 6, 0x24
    .byte 0
    .uleb128 0x03, 0x08, 0x0b, 0x0f
    .byte 0, 0
    .uleb128 7, 0x0d
    .byte 0
    .uleb128 0x03, 0x08, 0x49, 0x13, 0x6b, 0x0f, 0x0d, 0x0f, 0x0b, 0x0f
    .byte 0, 0
    .uleb128 8, 0x15
    .byte 1
    .uleb128 0x49, 0x13
    .byte 0, 0
    .uleb128 9, 0x05
    .byte 0
    .uleb128 0x49, 0x13
    .byte 0, 0
    .uleb128 10, 0x0d
    .byte 0
    .uleb128 0x03, 0x08, 0x49, 0x13, 0x38, 0x0f
    .byte 0, 0
    .uleb128 11, 0x01
    .byte 1
    .uleb128 0x49, 0x13
    .byte 0, 0
    .uleb128 12, 0x21
    .byte 0
    .uleb128 0x22, 0x0f, 0x2f, 0x0f
    .byte 0, 0
    .byte 0

    .section .debug_info,"",%progbits
.Lcu:
    .long .Lend - .Lversion
.Lversion:
    .short 4
    .long 0
    .byte 8
    .uleb128 1
    .asciz "hostile.c"
.Lbase:
    .uleb128 6
    .asciz "long"
    .uleb128 8
.Lhuge:
    .uleb128 6
    .asciz "huge"
    .uleb128 0xffffffffffffffff
.Lstruct:
    .uleb128 3
    .asciz "s"
    .uleb128 0xffffffffffffffff
    .uleb128 4
    .asciz "a"
    .long .Lbase - .Lcu
    .uleb128 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff
    .uleb128 4
    .asciz "b"
    .long .Lbase - .Lcu
    .uleb128 0xffffffffffffffff, 3, 0, 8
    .uleb128 5
    .asciz "c"
    .long .Lbase - .Lcu
    .uleb128 22
    .byte 0x23
    .uleb128 0xffffffffffffffff
    .byte 0x23
    .uleb128 0xffffffffffffffff
    .uleb128 7
    .asciz "d"
    .long .Lbase - .Lcu
    .uleb128 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff
    .uleb128 7
    .asciz "e"
    .long .Lbase - .Lcu
    .uleb128 0xfffffffffffffff0, 64, 8
    .uleb128 10
    .asciz "f"
    .long .Lhuge - .Lcu
    .uleb128 0xfffffffffffffff0
    .byte 0
.Larray:
    .uleb128 11
    .long .Lstruct - .Lcu
    .uleb128 12
    .uleb128 5, 0xffffffffffffffff
    .uleb128 12
    .uleb128 0xffffffffffffffff, 2
    .byte 0
    .uleb128 2
    .asciz "v"
    .long .Lstruct - .Lcu
    .uleb128 9
    .byte 0x03
    .quad 0x1000
    .uleb128 2
    .asciz "w"
    .long .Larray - .Lcu
    .uleb128 9
    .byte 0x03
    .quad 0x2000
.Lfn:
    .uleb128 8
    .long .Lfn - .Lcu
    .uleb128 9
    .long .Lfn - .Lcu
    .uleb128 9
    .long .Lfn - .Lcu
    .byte 0
    .uleb128 2
    .asciz "g"
    .long .Lfn - .Lcu
    .uleb128 9
    .byte 0x03
    .quad 0x3000
    .byte 0
.Lend:
"#;

#[test]
fn footprint_dwarf_hostile_numbers_and_cycles_are_read_without_panic() {
    // Found by tests/hostile_input.rs's review of what DWARF can say: offsets and sizes
    // near 2^64 overflowed the layout's sums (a panic in debug builds), and a function
    // type naming itself as return and parameter types took 3^64 steps to name.
    let Some(cc) = cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("hostile.s");
    std::fs::write(&source, HOSTILE_DWARF).unwrap();
    let object = dir.path().join("hostile.o");
    let status = Command::new(cc)
        .args(["-c", "-o"])
        .arg(&object)
        .arg(&source)
        .status()
        .unwrap();
    assert!(status.success(), "{cc} could not assemble the DWARF");
    let started = std::time::Instant::now();
    let vars = variables(&std::fs::read(&object).unwrap()).unwrap();
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    let v = find(&vars, "v");
    let layout = v.layout.as_ref().unwrap();
    assert_eq!(layout.size, u64::MAX);
    assert_eq!(layout.members.len(), 6);
    assert!(find(&vars, "w").layout.is_some());
    assert!(
        find(&vars, "g").type_name.contains('?'),
        "{:?}",
        find(&vars, "g")
    );
}
