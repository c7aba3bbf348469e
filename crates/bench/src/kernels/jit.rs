//! Run-time generated probes for the out-of-order window (`memscope rob`): a byte-level
//! x86-64 encoder for the handful of instructions they need, and executable mappings that
//! are written while read-write and then switched to read-execute (never both at once).
//!
//! Two probes, after Henry Wong's method:
//!
//! - the **window loop**: `mov rdi,[rdi]`, K fillers, `mov rsi,[rsi]`, K fillers, repeated.
//!   The two loads walk independent cache-missing chains; while load A, the K fillers and
//!   load B fit in the structure the fillers occupy, both misses are in flight at once;
//!   beyond that, B waits for A to retire and an iteration costs two miss latencies;
//! - the **serialised block**: `lfence; rdtsc`, N−1 independent loads, K nops, one more
//!   load, `rdtscp; lfence`, timed as a whole on freshly flushed lines (the nops are the
//!   eight-byte form, see [`Filler::Nop`]).
//!
//! The filler kinds are portable (the command line names them everywhere); the code
//! generation is x86_64 only.

use serde::{Deserialize, Serialize};

/// What sits between the two misses, each kind chosen to fill one structure first;
/// written in reports by its name ("nop", "add", "xor", "load", "store").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Filler {
    /// The eight-byte `nop dword [rax+rax*1+0]`: reorder-buffer entries only. Not the
    /// one-byte 0x90: Zen 4 packs short NOPs several to a reorder-buffer entry (measured:
    /// one- to three-byte NOPs fill the window only at ~4× its size, four-byte ones at
    /// ~2×), while an eight-byte NOP takes an entry of its own.
    Nop,
    /// `add r64, rcx` with rotating destinations: one integer rename register each.
    Add,
    /// `xorps xmmD, xmm15` with rotating D ≠ 15 (not a zeroing idiom): vector registers.
    Xor,
    /// `mov r64, [rcx + off]`, L1 hits: load-queue entries.
    Load,
    /// `mov [rcx + off], r64`, L1 hits: store-queue entries.
    Store,
}

impl Filler {
    pub const ALL: [Filler; 5] = [
        Filler::Nop,
        Filler::Add,
        Filler::Xor,
        Filler::Load,
        Filler::Store,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Filler::Nop => "nop",
            Filler::Add => "add",
            Filler::Xor => "xor",
            Filler::Load => "load",
            Filler::Store => "store",
        }
    }

    /// The structure this filler fills first.
    pub(crate) fn structure(self) -> Structure {
        match self {
            Filler::Nop => Structure::ReorderBuffer,
            Filler::Add => Structure::IntegerRegisterFile,
            Filler::Xor => Structure::VectorRegisterFile,
            Filler::Load => Structure::LoadQueue,
            Filler::Store => Structure::StoreQueue,
        }
    }

    /// Entries of that structure the two chase loads take themselves: each load has a
    /// reorder-buffer entry, an integer destination register and a load-queue entry, but
    /// no vector register and no store-queue entry.
    pub(crate) fn miss_entries(self) -> u32 {
        match self {
            Filler::Nop | Filler::Add | Filler::Load => 2,
            Filler::Xor | Filler::Store => 0,
        }
    }

    pub fn parse(text: &str) -> Option<Filler> {
        let text = text.trim().to_ascii_lowercase();
        Filler::ALL.into_iter().find(|f| f.name() == text)
    }

    /// "nop, add, xor, load, store", for help and error texts.
    pub fn names() -> String {
        Filler::ALL.map(Filler::name).join(", ")
    }
}

impl std::fmt::Display for Filler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An out-of-order structure a filler fills first, written in reports by its name
/// ("reorder buffer", …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Structure {
    #[serde(rename = "reorder buffer")]
    ReorderBuffer,
    #[serde(rename = "integer register file")]
    IntegerRegisterFile,
    #[serde(rename = "vector register file")]
    VectorRegisterFile,
    #[serde(rename = "load queue")]
    LoadQueue,
    #[serde(rename = "store queue")]
    StoreQueue,
}

impl Structure {
    pub fn name(self) -> &'static str {
        match self {
            Structure::ReorderBuffer => "reorder buffer",
            Structure::IntegerRegisterFile => "integer register file",
            Structure::VectorRegisterFile => "vector register file",
            Structure::LoadQueue => "load queue",
            Structure::StoreQueue => "store queue",
        }
    }
}

impl std::fmt::Display for Structure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes of the L1-resident scratch buffer the load and store fillers address.
pub(crate) const SCRATCH_BYTES: usize = 4096;

/// Most misses one serialised block can hold.
pub(crate) const MAX_SERIALIZED_MISSES: usize = 32;

#[cfg(target_arch = "x86_64")]
pub use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Filler, MAX_SERIALIZED_MISSES, SCRATCH_BYTES};
    use std::io;

    // Register numbers as the encoding uses them.
    const RAX: u8 = 0;
    const RCX: u8 = 1;
    const RDX: u8 = 2;
    const RBX: u8 = 3;
    const RBP: u8 = 5;
    const RSI: u8 = 6;
    const RDI: u8 = 7;
    const R8: u8 = 8;
    const R9: u8 = 9;
    const R10: u8 = 10;
    const R11: u8 = 11;
    const R12: u8 = 12;
    const R13: u8 = 13;
    const R14: u8 = 14;
    const R15: u8 = 15;

    /// Callee-saved registers the window loop uses as filler destinations.
    const SAVED: [u8; 6] = [RBX, RBP, R12, R13, R14, R15];
    /// Filler destinations: everything but the two chase pointers, the counter, the
    /// scratch pointer and rsp. Eleven registers, so a run of K adds forms eleven
    /// independent chains of K/11 one-cycle adds, short beside a miss.
    const DESTINATIONS: [u8; 11] = [RAX, RBX, RBP, R8, R9, R10, R11, R12, R13, R14, R15];
    /// The vector filler's constant source; destinations rotate over xmm0–xmm14.
    const XMM_SOURCE: u8 = 15;

    /// A byte-level encoder for the few instructions the probes use.
    #[derive(Default)]
    struct Asm {
        code: Vec<u8>,
    }

    impl Asm {
        fn len(&self) -> usize {
            self.code.len()
        }

        fn bytes(&mut self, bytes: &[u8]) {
            self.code.extend_from_slice(bytes);
        }

        /// REX with W set (64-bit operand); `reg` extends ModRM.reg, `base` ModRM.rm.
        fn rex_w(&mut self, reg: u8, base: u8) {
            self.code.push(0x48 | ((reg >> 3) << 2) | (base >> 3));
        }

        /// ModRM (+SIB, +displacement) for `[base + disp]`.
        fn mem_operand(&mut self, reg: u8, base: u8, disp: i32) {
            let (mode, disp_bytes): (u8, usize) = if disp == 0 && base & 7 != RBP {
                // mod 00 with rm = 101 would mean rip-relative, so rbp/r13 take a disp8.
                (0b00, 0)
            } else if i8::try_from(disp).is_ok() {
                (0b01, 1)
            } else {
                (0b10, 4)
            };
            self.code.push((mode << 6) | ((reg & 7) << 3) | (base & 7));
            if base & 7 == 0b100 {
                // rm = 100 means "SIB follows": no index, base = rsp/r12.
                self.code.push(0x24);
            }
            self.code
                .extend_from_slice(&disp.to_le_bytes()[..disp_bytes]);
        }

        /// ModRM for two registers.
        fn reg_operand(&mut self, reg: u8, rm: u8) {
            self.code.push(0xc0 | ((reg & 7) << 3) | (rm & 7));
        }

        /// `mov dst, [base + disp]`
        fn load(&mut self, dst: u8, base: u8, disp: i32) {
            self.rex_w(dst, base);
            self.code.push(0x8b);
            self.mem_operand(dst, base, disp);
        }

        /// `mov [base + disp], src`
        fn store(&mut self, base: u8, disp: i32, src: u8) {
            self.rex_w(src, base);
            self.code.push(0x89);
            self.mem_operand(src, base, disp);
        }

        /// `mov dst, src`
        fn mov(&mut self, dst: u8, src: u8) {
            self.rex_w(src, dst);
            self.code.push(0x89);
            self.reg_operand(src, dst);
        }

        /// `add dst, src`
        fn add(&mut self, dst: u8, src: u8) {
            self.rex_w(src, dst);
            self.code.push(0x01);
            self.reg_operand(src, dst);
        }

        /// `or dst, src`
        fn or(&mut self, dst: u8, src: u8) {
            self.rex_w(src, dst);
            self.code.push(0x09);
            self.reg_operand(src, dst);
        }

        /// `sub dst, src`
        fn sub(&mut self, dst: u8, src: u8) {
            self.rex_w(src, dst);
            self.code.push(0x29);
            self.reg_operand(src, dst);
        }

        /// `test a, b`
        fn test(&mut self, a: u8, b: u8) {
            self.rex_w(b, a);
            self.code.push(0x85);
            self.reg_operand(b, a);
        }

        /// `shl dst, imm8`
        fn shl(&mut self, dst: u8, count: u8) {
            self.rex_w(0, dst);
            self.code.push(0xc1);
            self.reg_operand(4, dst);
            self.code.push(count);
        }

        /// `dec dst`
        fn dec(&mut self, dst: u8) {
            self.rex_w(0, dst);
            self.code.push(0xff);
            self.reg_operand(1, dst);
        }

        /// `xorps xmm_dst, xmm_src`
        fn xorps(&mut self, dst: u8, src: u8) {
            if dst > 7 || src > 7 {
                self.code.push(0x40 | ((dst >> 3) << 2) | (src >> 3));
            }
            self.bytes(&[0x0f, 0x57]);
            self.reg_operand(dst, src);
        }

        fn push(&mut self, reg: u8) {
            if reg > 7 {
                self.code.push(0x41);
            }
            self.code.push(0x50 + (reg & 7));
        }

        fn pop(&mut self, reg: u8) {
            if reg > 7 {
                self.code.push(0x41);
            }
            self.code.push(0x58 + (reg & 7));
        }

        /// One-byte `nop` (padding).
        fn nop(&mut self) {
            self.code.push(0x90);
        }

        /// Eight-byte `nop dword [rax+rax*1+0]`: one reorder-buffer entry each.
        fn long_nop(&mut self) {
            self.bytes(&[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00]);
        }

        fn lfence(&mut self) {
            self.bytes(&[0x0f, 0xae, 0xe8]);
        }

        /// `rdtsc`: edx:eax = TSC.
        fn rdtsc(&mut self) {
            self.bytes(&[0x0f, 0x31]);
        }

        /// `rdtscp`: edx:eax = TSC once earlier instructions have executed; ecx = aux.
        fn rdtscp(&mut self) {
            self.bytes(&[0x0f, 0x01, 0xf9]);
        }

        fn ret(&mut self) {
            self.code.push(0xc3);
        }

        /// Pads with one-byte nops (run once, before the loop) to a multiple of `align`.
        fn align(&mut self, align: usize) {
            while !self.len().is_multiple_of(align) {
                self.nop();
            }
        }

        /// `jnz target` (rel32: loop bodies run to kilobytes).
        fn jnz_back(&mut self, target: usize) {
            let end = self.len() + 6;
            let rel = i32::try_from(target as i64 - end as i64).expect("loop under 2 GiB");
            self.bytes(&[0x0f, 0x85]);
            self.bytes(&rel.to_le_bytes());
        }

        /// `jz` with a placeholder displacement; returns where to patch it.
        fn jz_forward(&mut self) -> usize {
            self.bytes(&[0x0f, 0x84, 0, 0, 0, 0]);
            self.len() - 4
        }

        /// Points a `jz_forward` at the current position.
        fn patch_here(&mut self, at: usize) {
            let rel = i32::try_from(self.len() - (at + 4)).expect("jump under 2 GiB");
            self.code[at..at + 4].copy_from_slice(&rel.to_le_bytes());
        }

        /// Filler number `index` (counted across both halves of the loop, so destinations
        /// and scratch offsets keep rotating).
        fn filler(&mut self, filler: Filler, index: usize) {
            let dst = DESTINATIONS[index % DESTINATIONS.len()];
            match filler {
                Filler::Nop => self.long_nop(),
                Filler::Add => self.add(dst, RCX),
                Filler::Xor => self.xorps((index % XMM_SOURCE as usize) as u8, XMM_SOURCE),
                Filler::Load => self.load(dst, RCX, scratch_offset(index)),
                Filler::Store => self.store(RCX, scratch_offset(index), dst),
            }
        }
    }

    /// A different 8-byte word of the scratch buffer for each of 512 consecutive fillers,
    /// one line after another so neighbouring fillers never share a line.
    fn scratch_offset(index: usize) -> i32 {
        let lines = SCRATCH_BYTES / 64;
        let line = index % lines;
        let word = (index / lines) % 8;
        (line * 64 + word * 8) as i32
    }

    /// Machine code in an anonymous mapping: written read-write, then made read-execute.
    /// Unmapped on drop.
    pub struct Code {
        ptr: *mut u8,
        len: usize,
    }

    impl Code {
        fn new(bytes: &[u8]) -> io::Result<Code> {
            let len = bytes.len().max(1).div_ceil(4096) * 4096;
            // SAFETY: a fresh private anonymous mapping, checked below.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let code = Code {
                ptr: ptr as *mut u8,
                len,
            };
            // SAFETY: the mapping is `len` ≥ bytes.len() writable bytes and not shared.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), code.ptr, bytes.len()) };
            // SAFETY: our own mapping; from here on it is never writable again.
            if unsafe { libc::mprotect(ptr, len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(code)
        }

        pub fn as_ptr(&self) -> *const u8 {
            self.ptr
        }

        /// Bytes mapped (whole pages).
        #[cfg(test)]
        pub(crate) fn mapped_len(&self) -> usize {
            self.len
        }
    }

    impl Drop for Code {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly the mapping created in `new`; nothing points into it
            // once its owner is gone.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
        }
    }

    /// Where the two chains stopped (returned in rax:rdx).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct ChasePair {
        pub a: *const usize,
        pub b: *const usize,
    }

    type WindowFn = unsafe extern "sysv64" fn(
        a: *const usize,
        b: *const usize,
        iterations: u64,
        scratch: *mut u8,
    ) -> ChasePair;

    /// The window loop for one filler kind and K.
    pub(crate) struct WindowLoop {
        /// The mapping `entry` points into, unmapped when the loop is dropped.
        _code: Code,
        entry: WindowFn,
    }

    impl WindowLoop {
        pub fn new(filler: Filler, k: u32) -> io::Result<WindowLoop> {
            Self::with_emitter(k, |asm, index| asm.filler(filler, index))
        }

        fn with_emitter(k: u32, emit: impl Fn(&mut Asm, usize)) -> io::Result<WindowLoop> {
            let mut asm = Asm::default();
            for reg in SAVED {
                asm.push(reg);
            }
            asm.test(RDX, RDX);
            let skip = asm.jz_forward();
            asm.align(64);
            let top = asm.len();
            let mut index = 0;
            asm.load(RDI, RDI, 0);
            for _ in 0..k {
                emit(&mut asm, index);
                index += 1;
            }
            asm.load(RSI, RSI, 0);
            for _ in 0..k {
                emit(&mut asm, index);
                index += 1;
            }
            asm.dec(RDX);
            asm.jnz_back(top);
            asm.patch_here(skip);
            asm.mov(RAX, RDI);
            asm.mov(RDX, RSI);
            for reg in SAVED.iter().rev() {
                asm.pop(*reg);
            }
            asm.ret();
            let code = Code::new(&asm.code)?;
            // SAFETY: the mapping holds a complete function with this signature (sysv64:
            // arguments in rdi, rsi, rdx, rcx; the pair returned in rax:rdx; callee-saved
            // registers pushed and popped).
            let entry = unsafe { std::mem::transmute::<*const u8, WindowFn>(code.as_ptr()) };
            Ok(WindowLoop { _code: code, entry })
        }

        /// Runs `iterations` loop iterations (each one step on both chains) and returns
        /// where the chains stopped; pass them back in to continue.
        ///
        /// # Safety
        /// `a` and `b` must start chains whose every slot holds the address of another
        /// readable slot; `scratch` must be valid for reads and writes of
        /// [`SCRATCH_BYTES`] bytes (its contents are overwritten by the store filler).
        pub unsafe fn run(
            &self,
            a: *const usize,
            b: *const usize,
            iterations: u64,
            scratch: *mut u8,
        ) -> ChasePair {
            (self.entry)(a, b, iterations, scratch)
        }

        #[cfg(test)]
        pub fn code(&self) -> &Code {
            &self._code
        }
    }

    type BlockFn = unsafe extern "sysv64" fn(base: *const u8) -> u64;

    /// The serialised block: N−1 independent loads, K nops, one load, timed inside.
    pub(crate) struct SerializedBlock {
        /// The mapping `entry` points into, unmapped when the block is dropped.
        _code: Code,
        entry: BlockFn,
    }

    impl SerializedBlock {
        /// One load from `base + displacement` for each displacement, the last one after
        /// the K nops. The addresses are immediate displacements from one base register,
        /// so no timed load waits for an address. 1 ≤ displacements ≤
        /// [`MAX_SERIALIZED_MISSES`].
        pub fn new(displacements: &[i32], k: u32) -> io::Result<SerializedBlock> {
            let misses = displacements.len();
            if misses == 0 || misses > MAX_SERIALIZED_MISSES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a serialised block holds 1 to {MAX_SERIALIZED_MISSES} misses, not {misses}"),
                ));
            }
            const LOAD_DESTINATIONS: [u8; 3] = [R9, R10, R11];
            let mut asm = Asm::default();
            asm.lfence();
            asm.rdtsc();
            asm.shl(RDX, 32);
            asm.or(RAX, RDX);
            asm.mov(R8, RAX);
            // Keeps the loads from starting before the clock is read.
            asm.lfence();
            let (last, first) = displacements.split_last().expect("at least one");
            for (i, disp) in first.iter().enumerate() {
                asm.load(LOAD_DESTINATIONS[i % LOAD_DESTINATIONS.len()], RDI, *disp);
            }
            for _ in 0..k {
                asm.long_nop();
            }
            asm.load(R9, RDI, *last);
            // rdtscp reads the clock once every earlier instruction has executed.
            asm.rdtscp();
            asm.lfence();
            asm.shl(RDX, 32);
            asm.or(RAX, RDX);
            asm.sub(RAX, R8);
            asm.ret();
            let code = Code::new(&asm.code)?;
            // SAFETY: a complete sysv64 function taking one pointer, returning u64 in rax,
            // touching only caller-saved registers.
            let entry = unsafe { std::mem::transmute::<*const u8, BlockFn>(code.as_ptr()) };
            Ok(SerializedBlock { _code: code, entry })
        }

        /// Runs the block once and returns its duration in TSC ticks.
        ///
        /// # Safety
        /// `base + displacement` must be readable for 8 bytes for every displacement.
        pub unsafe fn run(&self, base: *const u8) -> u64 {
            (self.entry)(base)
        }
    }

    /// Whether this process may map executable memory (a hardened kernel or SELinux
    /// policy can refuse it); the error says why not.
    pub fn probe() -> io::Result<()> {
        let probe = WindowLoop::new(Filler::Nop, 0)?;
        let mut slot = 0usize;
        let p: *mut usize = &mut slot;
        // SAFETY: `p` points at `slot`, which now holds its own address.
        unsafe { p.write(p as usize) };
        let p = p as *const usize;
        let mut scratch = [0u8; SCRATCH_BYTES];
        // SAFETY: a chain of one self-pointing slot; scratch has SCRATCH_BYTES bytes.
        let end = unsafe { probe.run(p, p, 3, scratch.as_mut_ptr()) };
        if end.a == p && end.b == p {
            Ok(())
        } else {
            Err(io::Error::other("generated code returned a wrong result"))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// `slots` 8-byte slots forming the cycle 0 → 1 → … → slots−1 → 0.
        fn ring(slots: usize) -> Vec<usize> {
            let mut ring = vec![0usize; slots];
            let base = ring.as_mut_ptr();
            for (i, slot) in ring.iter_mut().enumerate() {
                // SAFETY: (i + 1) % slots is inside the vector.
                *slot = unsafe { base.add((i + 1) % slots) } as usize;
            }
            ring
        }

        #[test]
        fn encodes_the_awkward_base_registers() {
            let mut asm = Asm::default();
            asm.load(RAX, R12, 0); // needs a SIB byte
            asm.load(RAX, R13, 0); // needs a zero disp8
            asm.load(R15, RCX, 200); // disp32
            asm.store(RCX, -8, R9); // disp8
            assert_eq!(
                asm.code,
                [
                    0x49, 0x8b, 0x04, 0x24, //
                    0x49, 0x8b, 0x45, 0x00, //
                    0x4c, 0x8b, 0xb9, 200, 0, 0, 0, //
                    0x4c, 0x89, 0x49, 0xf8,
                ]
            );
            let mut asm = Asm::default();
            asm.add(R14, RCX);
            asm.xorps(3, 15);
            asm.dec(RDX);
            assert_eq!(
                asm.code,
                [0x49, 0x01, 0xce, 0x41, 0x0f, 0x57, 0xdf, 0x48, 0xff, 0xca]
            );
        }

        #[test]
        fn window_loop_follows_both_chains_for_every_filler_and_k() {
            let mut a = ring(2);
            let mut b = ring(3);
            let mut scratch = vec![0u8; 3 * SCRATCH_BYTES];
            let a0 = a.as_mut_ptr() as *const usize;
            let b0 = b.as_mut_ptr() as *const usize;
            for filler in Filler::ALL {
                for k in [0, 1, 7, 64, 1024] {
                    let probe = WindowLoop::new(filler, k).unwrap();
                    for iterations in [0u64, 1, 5, 6, 1000] {
                        // SAFETY: both rings are closed cycles; the middle third of the
                        // scratch vector is SCRATCH_BYTES long.
                        let end = unsafe {
                            probe.run(a0, b0, iterations, scratch.as_mut_ptr().add(SCRATCH_BYTES))
                        };
                        // SAFETY: offsets inside the rings.
                        let expected = unsafe {
                            ChasePair {
                                a: a0.add(iterations as usize % 2),
                                b: b0.add(iterations as usize % 3),
                            }
                        };
                        assert_eq!(
                            end,
                            expected,
                            "{} K={k} iterations={iterations}",
                            filler.name()
                        );
                    }
                }
            }
            // The stores stayed inside the scratch buffer.
            assert!(scratch[..SCRATCH_BYTES].iter().all(|&b| b == 0));
            assert!(scratch[2 * SCRATCH_BYTES..].iter().all(|&b| b == 0));
        }

        #[test]
        fn window_loop_preserves_callee_saved_registers() {
            let mut a = ring(2);
            let a0 = a.as_mut_ptr() as *const usize;
            let mut scratch = vec![0u8; SCRATCH_BYTES];
            for filler in [Filler::Add, Filler::Load] {
                let probe = WindowLoop::new(filler, 64).unwrap();
                let entry = probe.code().as_ptr();
                let (mut r12, mut r13, mut r14, mut r15) = (12u64, 13u64, 14u64, 15u64);
                // SAFETY: calls the generated function with valid arguments; the asm
                // declares every register the sysv64 ABI lets a callee clobber.
                unsafe {
                    core::arch::asm!(
                        "call {entry}",
                        entry = in(reg) entry,
                        in("rdi") a0,
                        in("rsi") a0,
                        in("rdx") 10u64,
                        in("rcx") scratch.as_mut_ptr(),
                        inout("r12") r12,
                        inout("r13") r13,
                        inout("r14") r14,
                        inout("r15") r15,
                        clobber_abi("sysv64"),
                    );
                }
                assert_eq!((r12, r13, r14, r15), (12, 13, 14, 15), "{}", filler.name());
            }
        }

        #[test]
        fn serialized_block_returns_a_positive_tick_count() {
            let lines = vec![0u64; 8 * MAX_SERIALIZED_MISSES];
            let displacements: Vec<i32> =
                (0..MAX_SERIALIZED_MISSES as i32).map(|i| i * 64).collect();
            for misses in [1, 2, 5, MAX_SERIALIZED_MISSES] {
                for k in [0, 100] {
                    let block = SerializedBlock::new(&displacements[..misses], k).unwrap();
                    // SAFETY: every displacement is inside `lines`.
                    let ticks = unsafe { block.run(lines.as_ptr() as *const u8) };
                    assert!(
                        ticks > 0 && ticks < 1 << 40,
                        "{misses} misses, K={k}: {ticks}"
                    );
                }
            }
            assert!(SerializedBlock::new(&[], 0).is_err());
            assert!(SerializedBlock::new(&displacements.repeat(2), 0).is_err());
        }

        /// The permissions of the /proc/self/maps line that contains `address`.
        fn permissions(address: usize) -> String {
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            for line in maps.lines() {
                let mut fields = line.split_whitespace();
                let range = fields.next().unwrap();
                let (start, end) = range.split_once('-').unwrap();
                let start = usize::from_str_radix(start, 16).unwrap();
                let end = usize::from_str_radix(end, 16).unwrap();
                if (start..end).contains(&address) {
                    return fields.next().unwrap().to_string();
                }
            }
            panic!("{address:#x} is not mapped");
        }

        #[test]
        fn finished_code_is_executable_and_not_writable() {
            let probe = WindowLoop::new(Filler::Store, 16).unwrap();
            let start = probe.code().as_ptr() as usize;
            assert_eq!(start % 64, 0);
            assert_eq!(permissions(start), "r-xp");
            let end = start + probe.code().mapped_len() - 1;
            assert_eq!(permissions(end), "r-xp");
        }

        #[test]
        fn probe_succeeds_here() {
            probe().unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_names_round_trip() {
        for filler in Filler::ALL {
            assert_eq!(Filler::parse(filler.name()), Some(filler));
            assert_eq!(Filler::parse(&filler.name().to_uppercase()), Some(filler));
        }
        assert_eq!(Filler::parse("mul"), None);
        assert_eq!(Filler::names(), "nop, add, xor, load, store");
    }
}
