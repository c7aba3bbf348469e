//! A binary's TLS and static data variables, their C types and struct layouts, read from
//! its DWARF (versions 4 and 5, plain or compressed sections) the way pahole shows them.

mod load;
mod types;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use gimli::{AttributeValue, UnitOffset};

use types::{Die, TypeCtx};

/// A variable with a fixed address or a TLS offset.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Variable {
    pub name: String,
    /// The type as C spells it, e.g. "struct tcache", "void *[64]", "unsigned long".
    pub type_name: String,
    pub size: u64,
    /// Thread-local (location ends in DW_OP_form_tls_address 0x9b or DW_OP_GNU_push_tls_address 0xe0).
    pub tls: bool,
    /// The address (static) or the offset in the TLS block (tls), when the location is a plain DW_OP_addr / DW_OP_const*u + tls op.
    pub address: Option<u64>,
    /// Array dimensions, outermost first: (count, the DW_TAG_subrange_type's upper bound as a named constant if DWARF names it (DW_AT_upper_bound/DW_AT_count referring to a variable or enumerator), else None).
    pub dimensions: Vec<(u64, Option<String>)>,
    /// The layout of the variable's struct/union/class type (after peeling typedefs, const, volatile and arrays of structs: for an array of structs, the element's layout).
    pub layout: Option<Layout>,
    /// When the variable is a thread-local pointer to a struct, union or class of known
    /// size: what it points to (a TLS pointer's pointee is usually allocated once per thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointee: Option<Pointee>,
}

/// What a pointer variable points to.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pointee {
    /// The pointed-to type as C spells it ("mi_heap_t", "struct tcache").
    pub type_name: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
}

/// A struct, union or class: its members, the holes between them and the tail padding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    pub name: String,
    pub size: u64,
    pub members: Vec<Member>,
    /// (offset, bytes) gaps between members
    pub holes: Vec<(u64, u64)>,
    /// bytes after the last member up to size
    pub padding: u64,
}

/// One member of a [`Layout`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    pub name: String,
    pub type_name: String,
    /// Byte offset; for a bit-field, the offset of its storage unit (aligned to the size of its type).
    pub offset: u64,
    /// Byte size of the member's type (for a bit-field, its storage unit).
    pub size: u64,
    /// bit-field: (bit_size, bit_offset), the bit offset counted from the storage unit's least significant bit.
    pub bits: Option<(u64, u64)>,
}

/// Where a variable lives, decoded from a single-location DW_AT_location expression.
struct Location {
    tls: bool,
    address: Option<u64>,
}

/// Every variable with a location in the file's DWARF (compilation units' DW_TAG_variable at any depth that have DW_AT_location or are DW_AT_declaration-free definitions with DW_AT_location), TLS and static; Ok(empty) when there is no .debug_info; Err(sentence) when DWARF is present but unreadable.
///
/// Only locations that name static storage (DW_OP_addr/DW_OP_addrx) or a TLS offset are
/// kept: stack and register locals and location lists are not static data.
pub fn variables(data: &[u8]) -> Result<Vec<Variable>, String> {
    let Some(sections) = load::Sections::load(data)? else {
        return Ok(Vec::new());
    };
    let dwarf = sections.dwarf();
    let mut out = Vec::new();
    let mut seen: HashSet<(String, Option<u64>, bool)> = HashSet::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next().map_err(dwarf_error)? {
        let unit = dwarf.unit(header).map_err(dwarf_error)?;
        let unit = unit.unit_ref(&dwarf);
        let ctx = TypeCtx::new(unit);
        let mut offsets: Vec<UnitOffset> = Vec::new();
        let mut cursor = unit.entries();
        while let Some(die) = cursor.next_dfs().map_err(dwarf_error)? {
            if die.tag() == gimli::DW_TAG_variable && die.has_attr(gimli::DW_AT_location) {
                offsets.push(die.offset());
            }
        }
        for offset in offsets {
            let die = ctx.entry(offset).map_err(dwarf_error)?;
            if let Some(var) = variable(&ctx, &die).map_err(dwarf_error)? {
                if seen.insert((var.name.clone(), var.address, var.tls)) {
                    out.push(var);
                }
            }
        }
    }
    Ok(out)
}

fn dwarf_error(e: gimli::Error) -> String {
    format!("The DWARF could not be read: {e}.")
}

/// The variable described by `die`, when its location is static or thread-local.
fn variable<'d>(ctx: &TypeCtx<'_, 'd>, die: &Die<'d>) -> gimli::Result<Option<Variable>> {
    let Some(location) = location(ctx, die)? else {
        return Ok(None);
    };
    // A C++ static member's definition names its declaration through DW_AT_specification.
    let origin = match die
        .attr_value(gimli::DW_AT_specification)
        .or_else(|| die.attr_value(gimli::DW_AT_abstract_origin))
    {
        Some(value) => match ctx.reference(value) {
            Some(offset) => Some(ctx.entry(offset)?),
            None => None,
        },
        None => None,
    };
    let name = match ctx.name(die)? {
        Some(name) => name,
        None => match &origin {
            Some(origin) => ctx.name(origin)?.unwrap_or_default(),
            None => String::new(),
        },
    };
    let ty = ctx
        .type_of(die)
        .or_else(|| origin.as_ref().and_then(|o| ctx.type_of(o)));
    let type_name = ctx.type_name(ty, String::new(), 0)?;
    let size = ctx.type_size(ty, 0)?.unwrap_or(0);
    let dimensions = match ty {
        Some(offset) => ctx.dimensions(offset)?,
        None => Vec::new(),
    };
    let layout = match ty {
        Some(offset) => ctx.layout_of_data(offset)?,
        None => None,
    };
    // Only a thread-local pointer's pointee is per-thread data; others are not followed.
    let pointee = match ty {
        Some(offset) if location.tls => ctx.pointee(offset)?,
        _ => None,
    };
    Ok(Some(Variable {
        name,
        type_name,
        size,
        tls: location.tls,
        address: location.address,
        dimensions,
        layout,
        pointee,
    }))
}

/// Decodes DW_AT_location: `DW_OP_addr A` / `DW_OP_addrx i` (static), or a constant or
/// address followed by a TLS op (thread-local). Anything else is not static data.
fn location<'d>(ctx: &TypeCtx<'_, 'd>, die: &Die<'d>) -> gimli::Result<Option<Location>> {
    let Some(AttributeValue::Exprloc(expr)) = die.attr_value(gimli::DW_AT_location) else {
        return Ok(None);
    };
    let mut ops = expr.operations(ctx.unit.encoding());
    let mut stack: Vec<Option<u64>> = Vec::new();
    let mut tls = false;
    let mut is_static = false;
    while let Some(op) = ops.next()? {
        match op {
            gimli::Operation::Address { address } => {
                is_static = true;
                stack.push(Some(address));
            }
            gimli::Operation::AddressIndex { index } => {
                is_static = true;
                stack.push(Some(ctx.unit.address(index)?));
            }
            gimli::Operation::ConstantIndex { index } => {
                stack.push(Some(ctx.unit.address(index)?));
            }
            gimli::Operation::UnsignedConstant { value } => stack.push(Some(value)),
            gimli::Operation::SignedConstant { value } => stack.push(u64::try_from(value).ok()),
            gimli::Operation::TLS => tls = true,
            gimli::Operation::PlusConstant { value } => {
                if let Some(Some(top)) = stack.last_mut() {
                    *top = top.wrapping_add(value);
                }
            }
            // Anything else (frame base, registers, arithmetic) is not a plain static location.
            _ => return Ok(None),
        }
    }
    if !tls && !is_static {
        return Ok(None);
    }
    let address = match stack.as_slice() {
        [Some(value)] => Some(*value),
        _ => None,
    };
    Ok(Some(Location { tls, address }))
}
