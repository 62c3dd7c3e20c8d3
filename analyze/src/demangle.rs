//! Rust (legacy and v0) and C++ (Itanium) symbol demangling.

/// Whether `name` is a mangled C++ (Itanium) or Rust symbol: the names
/// worth demangling and reading as qualified names.
pub fn is_mangled(name: &str) -> bool {
    name.starts_with("_Z") || name.starts_with("_R")
}

/// Demangled form of a symbol, or the symbol itself.
pub fn demangle(name: &str) -> String {
    // Strip versions from dynamic symbols (memcpy@@GLIBC_2.14).
    let (base, version) = match name.find('@') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    // Legacy Rust symbols end in a 17h<hash>E segment, possibly followed by
    // a compiler suffix (`.llvm.1234`); their escapes hold dots too
    // (`_ZN103_$LT$alloc..vec..into_iter..`): rustc-demangle itself tells
    // them from C++ names.
    let rust_legacy = base.starts_with("_ZN") && base.contains("17h");
    if base.starts_with("_R") || rust_legacy {
        if let Ok(d) = rustc_demangle::try_demangle(base) {
            return format!("{d:#}{version}");
        }
    }
    if base.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(base) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return format!("{s}{version}");
            }
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_rust_and_cpp() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
        assert_eq!(
            demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)"
        );
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(
            demangle(
                "_ZN4core4hash3sip6Hasher5write17h042f9d37684ba7c8E.llvm.12758470801792646851"
            ),
            "core::hash::sip::Hasher::write"
        );
        assert_eq!(
            demangle(
                "_ZN103_$LT$alloc..vec..into_iter..IntoIter$LT$T$C$A$GT$$u20$as$u20$core..iter..traits..iterator..Iterator$GT$4fold17h62f9e3ec07356c7fE"
            ),
            "<alloc::vec::into_iter::IntoIter<T,A> as core::iter::traits::iterator::Iterator>::fold"
        );
        assert_eq!(
            demangle(
                "_ZN4core3ptr54drop_in_place$LT$dcpi_models..schedule..InsnTiming$GT$17h6b7e9f1c877514deE.llvm.12767817787943133648"
            ),
            "core::ptr::drop_in_place<dcpi_models::schedule::InsnTiming>"
        );
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("memcpy@@GLIBC_2.14"), "memcpy@@GLIBC_2.14");
    }
}
