//! C type names, sizes, array dimensions and struct layouts from a unit's type DIEs.

use gimli::{AttributeValue, UnitOffset};

use super::load::R;
use super::{Layout, Member};

/// A debugging information entry of the module's reader.
pub(super) type Die<'a> = gimli::DebuggingInformationEntry<R<'a>>;

/// Type chains deeper than this are treated as cycles (malformed DWARF).
const MAX_DEPTH: usize = 64;

/// The most DIEs one type name visits: a function type that is its own return and
/// parameter types (malformed DWARF) would otherwise take 3^MAX_DEPTH steps.
const MAX_NAME_STEPS: usize = 4096;

/// A unit's type DIEs, and the lookups the variables need from them.
pub(super) struct TypeCtx<'u, 'd> {
    pub(super) unit: gimli::UnitRef<'u, R<'d>>,
    /// DIEs visited by the type name being built (`MAX_NAME_STEPS`).
    name_steps: std::cell::Cell<usize>,
}

impl<'u, 'd> TypeCtx<'u, 'd> {
    pub(super) fn new(unit: gimli::UnitRef<'u, R<'d>>) -> Self {
        TypeCtx {
            unit,
            name_steps: std::cell::Cell::new(0),
        }
    }

    pub(super) fn entry(&self, offset: UnitOffset) -> gimli::Result<Die<'d>> {
        self.unit.entry(offset)
    }

    /// The entry a reference attribute points at, when it is in this unit.
    pub(super) fn reference(&self, value: AttributeValue<R<'d>>) -> Option<UnitOffset> {
        match value {
            AttributeValue::UnitRef(offset) => Some(offset),
            AttributeValue::DebugInfoRef(offset) => offset.to_unit_offset(&self.unit.header),
            _ => None,
        }
    }

    pub(super) fn name(&self, die: &Die<'d>) -> gimli::Result<Option<String>> {
        match die.attr_value(gimli::DW_AT_name) {
            Some(value) => {
                let name = self.unit.attr_string(value)?;
                Ok(Some(name.to_string_lossy().into_owned()))
            }
            None => Ok(None),
        }
    }

    /// The DIE's DW_AT_type, when present and in this unit.
    pub(super) fn type_of(&self, die: &Die<'d>) -> Option<UnitOffset> {
        die.attr_value(gimli::DW_AT_type)
            .and_then(|value| self.reference(value))
    }

    fn udata(die: &Die<'d>, attr: gimli::DwAt) -> Option<u64> {
        die.attr(attr).and_then(|a| a.udata_value())
    }

    /// The children of the DIE at `offset`.
    fn children(&self, offset: UnitOffset) -> gimli::Result<Vec<Die<'d>>> {
        let mut tree = self.unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        let mut children = root.children();
        let mut out = Vec::new();
        while let Some(child) = children.next()? {
            out.push(child.entry().clone());
        }
        Ok(out)
    }

    /// The type at `offset` as C spells a declaration of `inner` with it; `inner` is the
    /// declarator built so far ("" for the bare type name, "*" for a pointer to it, ...).
    pub(super) fn type_name(
        &self,
        offset: Option<UnitOffset>,
        inner: String,
        depth: usize,
    ) -> gimli::Result<String> {
        let Some(offset) = offset else {
            return Ok(join("void", &inner));
        };
        if depth == 0 {
            self.name_steps.set(0);
        }
        self.name_steps.set(self.name_steps.get() + 1);
        if depth > MAX_DEPTH || self.name_steps.get() > MAX_NAME_STEPS {
            return Ok(join("?", &inner));
        }
        let die = self.entry(offset)?;
        let target = self.type_of(&die);
        let tag = die.tag();
        let name = self.name(&die)?;
        let tagged = |keyword: &str| match &name {
            Some(name) => format!("{keyword} {name}"),
            None => format!("{keyword} {{...}}"),
        };
        Ok(match tag {
            gimli::DW_TAG_base_type | gimli::DW_TAG_typedef | gimli::DW_TAG_unspecified_type => {
                join(name.as_deref().unwrap_or("?"), &inner)
            }
            gimli::DW_TAG_structure_type => join(&tagged("struct"), &inner),
            gimli::DW_TAG_union_type => join(&tagged("union"), &inner),
            gimli::DW_TAG_enumeration_type => join(&tagged("enum"), &inner),
            gimli::DW_TAG_class_type => join(&tagged("class"), &inner),
            gimli::DW_TAG_pointer_type => self.type_name(target, format!("*{inner}"), depth + 1)?,
            gimli::DW_TAG_reference_type => {
                self.type_name(target, format!("&{inner}"), depth + 1)?
            }
            gimli::DW_TAG_rvalue_reference_type => {
                self.type_name(target, format!("&&{inner}"), depth + 1)?
            }
            gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => {
                let qualifier = match tag {
                    gimli::DW_TAG_const_type => "const",
                    gimli::DW_TAG_volatile_type => "volatile",
                    gimli::DW_TAG_restrict_type => "restrict",
                    _ => "_Atomic",
                };
                let target_tag = match target {
                    Some(t) => Some(self.entry(t)?.tag()),
                    None => None,
                };
                if matches!(
                    target_tag,
                    Some(gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type)
                ) {
                    // `T * const`: the qualifier binds to the declarator.
                    let inner = if inner.is_empty() {
                        qualifier.to_string()
                    } else {
                        format!("{qualifier} {inner}")
                    };
                    self.type_name(target, format!(" {inner}"), depth + 1)?
                } else {
                    // A qualified array qualifies its elements, which DWARF 5 producers
                    // often qualify again: say it once.
                    let named = self.type_name(target, inner, depth + 1)?;
                    if named.starts_with(&format!("{qualifier} ")) {
                        named
                    } else {
                        format!("{qualifier} {named}")
                    }
                }
            }
            gimli::DW_TAG_array_type => {
                let mut suffix = String::new();
                for (count, _) in self.dimensions(offset)? {
                    suffix.push_str(&format!("[{count}]"));
                }
                let inner = if inner.starts_with('*') || inner.starts_with('&') {
                    format!("({inner})")
                } else {
                    inner
                };
                self.type_name(target, format!("{inner}{suffix}"), depth + 1)?
            }
            gimli::DW_TAG_subroutine_type => {
                let mut params = Vec::new();
                for child in self.children(offset)? {
                    match child.tag() {
                        gimli::DW_TAG_formal_parameter => params.push(self.type_name(
                            self.type_of(&child),
                            String::new(),
                            depth + 1,
                        )?),
                        gimli::DW_TAG_unspecified_parameters => params.push("...".to_string()),
                        _ => {}
                    }
                }
                if params.is_empty() {
                    params.push("void".to_string());
                }
                let params = params.join(", ");
                self.type_name(target, format!("({inner})({params})"), depth + 1)?
            }
            _ => join(name.as_deref().unwrap_or("?"), &inner),
        })
    }

    /// The type's size in bytes: DW_AT_byte_size, through typedefs and qualifiers, element
    /// size times counts for arrays, the unit's address size for pointers.
    pub(super) fn type_size(
        &self,
        offset: Option<UnitOffset>,
        depth: usize,
    ) -> gimli::Result<Option<u64>> {
        let Some(offset) = offset else {
            return Ok(None);
        };
        if depth > MAX_DEPTH {
            return Ok(None);
        }
        let die = self.entry(offset)?;
        if let Some(size) = Self::udata(&die, gimli::DW_AT_byte_size) {
            return Ok(Some(size));
        }
        Ok(match die.tag() {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type
            | gimli::DW_TAG_ptr_to_member_type => {
                Some(u64::from(self.unit.encoding().address_size))
            }
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => self.type_size(self.type_of(&die), depth + 1)?,
            gimli::DW_TAG_array_type => {
                let element = self.type_size(self.type_of(&die), depth + 1)?;
                let count = self
                    .dimensions(offset)?
                    .iter()
                    .fold(1u64, |product, (count, _)| product.saturating_mul(*count));
                element.map(|size| size.saturating_mul(count))
            }
            _ => None,
        })
    }

    /// Peels typedefs and qualifiers off the type at `offset`.
    fn peel(&self, mut offset: UnitOffset) -> gimli::Result<(UnitOffset, Die<'d>)> {
        for _ in 0..MAX_DEPTH {
            let die = self.entry(offset)?;
            match die.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => match self.type_of(&die) {
                    Some(next) => offset = next,
                    None => return Ok((offset, die)),
                },
                _ => return Ok((offset, die)),
            }
        }
        Ok((offset, self.entry(offset)?))
    }

    /// The dimensions of the array the type at `offset` is (through typedefs and
    /// qualifiers), outermost first; empty when it is not an array.
    pub(super) fn dimensions(
        &self,
        offset: UnitOffset,
    ) -> gimli::Result<Vec<(u64, Option<String>)>> {
        let (offset, die) = self.peel(offset)?;
        if die.tag() != gimli::DW_TAG_array_type {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for child in self.children(offset)? {
            if child.tag() != gimli::DW_TAG_subrange_type
                && child.tag() != gimli::DW_TAG_enumeration_type
            {
                continue;
            }
            let lower = Self::udata(&child, gimli::DW_AT_lower_bound).unwrap_or(0);
            let (count, named) = if let Some(value) = child.attr_value(gimli::DW_AT_count) {
                self.bound(value)?
            } else if let Some(value) = child.attr_value(gimli::DW_AT_upper_bound) {
                let (upper, named) = self.bound(value)?;
                let count = match child
                    .attr(gimli::DW_AT_upper_bound)
                    .and_then(|a| a.sdata_value())
                {
                    // clang spells a flexible array's bound -1.
                    Some(-1) => 0,
                    _ => upper.wrapping_sub(lower).wrapping_add(1),
                };
                (
                    if named.is_some() && upper == 0 {
                        0
                    } else {
                        count
                    },
                    named,
                )
            } else {
                (0, None)
            };
            out.push((count, named));
        }
        Ok(out)
    }

    /// A subrange bound: its value (0 when unknown), and its name when it refers to a
    /// variable or an enumerator.
    fn bound(&self, value: AttributeValue<R<'d>>) -> gimli::Result<(u64, Option<String>)> {
        if let Some(number) = value.udata_value() {
            return Ok((number, None));
        }
        let Some(offset) = self.reference(value) else {
            return Ok((0, None));
        };
        let die = self.entry(offset)?;
        let number = die
            .attr(gimli::DW_AT_const_value)
            .and_then(|a| a.udata_value())
            .unwrap_or(0);
        Ok((number, self.name(&die)?))
    }

    /// The layout of the struct/union/class a variable of type `offset` holds: through
    /// typedefs, qualifiers and arrays (an array of structs gives the element's layout).
    pub(super) fn layout_of_data(&self, offset: UnitOffset) -> gimli::Result<Option<Layout>> {
        let mut offset = offset;
        for _ in 0..MAX_DEPTH {
            let (peeled, die) = self.peel(offset)?;
            match die.tag() {
                gimli::DW_TAG_array_type => match self.type_of(&die) {
                    Some(element) => offset = element,
                    None => return Ok(None),
                },
                gimli::DW_TAG_structure_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_class_type => return self.layout(peeled, &die).map(Some),
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// What a variable of type `offset` points to, when it is a pointer (through typedefs
    /// and qualifiers) to a struct, union or class whose size this unit gives; a pointer
    /// to an incomplete type (declared only here) or to `void` has no pointee.
    pub(super) fn pointee(&self, offset: UnitOffset) -> gimli::Result<Option<super::Pointee>> {
        let (_, die) = self.peel(offset)?;
        if die.tag() != gimli::DW_TAG_pointer_type {
            return Ok(None);
        }
        let Some(target) = self.type_of(&die) else {
            return Ok(None);
        };
        let (peeled, target_die) = self.peel(target)?;
        if !matches!(
            target_die.tag(),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type
        ) || target_die.attr(gimli::DW_AT_declaration).is_some()
        {
            return Ok(None);
        }
        let Some(size) = Self::udata(&target_die, gimli::DW_AT_byte_size).filter(|&s| s > 0) else {
            return Ok(None);
        };
        Ok(Some(super::Pointee {
            type_name: self.type_name(Some(target), String::new(), 0)?,
            size,
            layout: Some(self.layout(peeled, &target_die)?),
        }))
    }

    fn layout(&self, offset: UnitOffset, die: &Die<'d>) -> gimli::Result<Layout> {
        let name = self.type_name(Some(offset), String::new(), 0)?;
        let size = Self::udata(die, gimli::DW_AT_byte_size).unwrap_or(0);
        let mut members = Vec::new();
        for child in self.children(offset)? {
            let is_base = child.tag() == gimli::DW_TAG_inheritance;
            if child.tag() != gimli::DW_TAG_member && !is_base {
                continue;
            }
            // C++ static members are declarations, not part of the layout.
            if child.attr(gimli::DW_AT_declaration).is_some()
                || child.tag() == gimli::DW_TAG_variable
            {
                continue;
            }
            let ty = self.type_of(&child);
            let type_name = self.type_name(ty, String::new(), 0)?;
            let member_size = self.type_size(ty, 0)?.unwrap_or(0);
            let name = match self.name(&child)? {
                Some(name) => name,
                None if is_base => "<ancestor>".to_string(),
                None => String::new(),
            };
            let byte_offset = match child.attr_value(gimli::DW_AT_data_member_location) {
                Some(AttributeValue::Exprloc(expr)) => {
                    plus_uconst(expr, self.unit.encoding())?.unwrap_or(0)
                }
                Some(value) => value.udata_value().unwrap_or(0),
                None => 0,
            };
            let (offset, bits) = match Self::udata(&child, gimli::DW_AT_bit_size) {
                Some(bit_size) => {
                    let storage =
                        Self::udata(&child, gimli::DW_AT_byte_size).unwrap_or(member_size);
                    let data_bit_offset = match Self::udata(&child, gimli::DW_AT_data_bit_offset) {
                        Some(bits) => bits,
                        // DWARF 2-4: DW_AT_bit_offset counts from the storage unit's
                        // most significant bit (little-endian layout assumed).
                        None => {
                            let msb_offset =
                                Self::udata(&child, gimli::DW_AT_bit_offset).unwrap_or(0);
                            // Saturating: hostile DWARF may put any of these near 2^64.
                            byte_offset
                                .saturating_mul(8)
                                .saturating_add(storage.saturating_mul(8))
                                .saturating_sub(msb_offset.saturating_add(bit_size))
                        }
                    };
                    let unit_offset = match storage {
                        0 => data_bit_offset / 8,
                        storage => {
                            let aligned = data_bit_offset / 8 / storage * storage;
                            let unit_end = aligned.saturating_add(storage).saturating_mul(8);
                            if data_bit_offset.saturating_add(bit_size) <= unit_end {
                                aligned
                            } else {
                                data_bit_offset / 8
                            }
                        }
                    };
                    (
                        unit_offset,
                        Some((bit_size, data_bit_offset - unit_offset * 8)),
                    )
                }
                None => (byte_offset, None),
            };
            members.push(Member {
                name,
                type_name,
                offset,
                size: member_size,
                bits,
            });
        }
        let mut holes = Vec::new();
        let mut end = 0u64;
        let mut order: Vec<&Member> = members.iter().collect();
        order.sort_by_key(|m| m.offset);
        for member in order {
            if member.offset > end {
                holes.push((end, member.offset - end));
            }
            end = end.max(member.offset.saturating_add(member.size));
        }
        let padding = size.saturating_sub(end);
        Ok(Layout {
            name,
            size,
            members,
            holes,
            padding,
        })
    }
}

/// The offset a DW_AT_data_member_location expression of the form `DW_OP_plus_uconst N`
/// (or a constant) gives.
fn plus_uconst(
    expr: gimli::Expression<R<'_>>,
    encoding: gimli::Encoding,
) -> gimli::Result<Option<u64>> {
    let mut ops = expr.operations(encoding);
    let mut value = None;
    while let Some(op) = ops.next()? {
        match op {
            gimli::Operation::PlusConstant { value: v }
            | gimli::Operation::UnsignedConstant { value: v } => {
                value = Some(value.unwrap_or(0u64).wrapping_add(v))
            }
            _ => return Ok(None),
        }
    }
    Ok(value)
}

/// `base` followed by the declarator `inner` as C spells it: "int", "int *", "int[4]",
/// "int (*)[4]".
fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_string()
    } else if inner.starts_with('[') || inner.starts_with(' ') {
        format!("{base}{inner}")
    } else {
        format!("{base} {inner}")
    }
}
