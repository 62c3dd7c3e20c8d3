//! The name a C++ or Rust user types for a function: its demangled name
//! without the return type, template arguments, parameter list and clone
//! suffix — `app::churn` for `long app::churn<app::Rec>(std::vector<...>&)`,
//! `std::__introsort_loop` for a `void std::__introsort_loop<...>(...)
//! [clone .isra.0]` — and its last component (`churn`).
//!
//! Limits: a heuristic on the demangled text, not a parse of the grammar.
//! Operator names keep their symbol (`Rec::operator<`, `F::operator()`);
//! a conversion operator keeps its type word (`operator bool`); a Rust
//! `<T as Trait>::method` keeps only `::method` (its last component,
//! `method`, still finds it).

/// `name` without return type, template arguments, parameters or clone
/// suffix (the same for a query, so `app::churn<app::Rec>` and
/// `app::churn` agree). `(anonymous namespace)` is kept as written.
pub fn qualified_name(name: &str) -> String {
    qualified(name, false)
}

/// [`qualified_name`] keeping the template arguments
/// (`app::churn<app::Rec>`), to tell one instance from another.
pub fn qualified_instance(name: &str) -> String {
    qualified(name, true)
}

fn qualified(name: &str, templates: bool) -> String {
    const ANON: &str = "(anonymous namespace)";
    let mut out = String::new();
    let mut angle = 0usize;
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with(ANON) {
            if angle == 0 || templates {
                out.push_str(ANON);
            }
            rest = &rest[ANON.len()..];
            continue;
        }
        if angle == 0 && out.ends_with("operator") && !is_word_char(c) {
            // The operator's own symbol: `()`, `[]`, `<`, `<<=`, `->*`,
            // ... or ` new`, ` delete[]`, ` bool` (a conversion).
            let op = operator_symbol(rest);
            out.push_str(op);
            rest = &rest[op.len()..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
        let outside = angle == 0;
        match c {
            '<' => angle += 1,
            '>' => angle = angle.saturating_sub(1),
            '(' if outside => break,
            _ => {}
        }
        if templates || (outside && angle == 0) {
            out.push(c);
        }
    }
    // The return type ends at the last space outside parentheses,
    // template arguments and operator names.
    let out = out.trim_end();
    let (mut depth, mut angle) = (0usize, 0usize);
    let mut cut = None;
    for (i, c) in out.char_indices() {
        let operator = out[..i].ends_with("operator");
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '<' if !operator => angle += 1,
            '>' if !operator => angle = angle.saturating_sub(1),
            ' ' if depth == 0 && angle == 0 && !operator => cut = Some(i),
            _ => {}
        }
    }
    match cut {
        Some(i) => out[i + 1..].to_string(),
        None => out.to_string(),
    }
}

/// The last `::` component of [`qualified_name`] (`churn` of `app::churn`).
pub fn last_component(qualified: &str) -> &str {
    let mut depth = 0usize;
    let mut start = 0;
    let b = qualified.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    &qualified[start..]
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The operator symbol at the start of `s` (just after `operator`).
fn operator_symbol(s: &str) -> &str {
    for fixed in ["()", "[]", "->*", "->", "<=>", "<<=", ">>=", "<<", ">>"] {
        if s.starts_with(fixed) {
            return &s[..fixed.len()];
        }
    }
    if let Some(word) = s.strip_prefix(' ') {
        // `operator new`, `operator delete[]`, `operator bool`.
        let n = word
            .find(|c: char| !(is_word_char(c) || c == '[' || c == ']'))
            .unwrap_or(word.len());
        return &s[..1 + n];
    }
    let n = s
        .find(|c: char| !"+-*/%^&|~!=<>,".contains(c))
        .unwrap_or(s.len());
    &s[..n.max(1).min(s.len())]
}

/// A C symbol without the suffix GCC gives a function's clones and
/// split-off parts (`match_len` of `match_len.constprop.0`,
/// `parse.isra.0`, `main.cold`, `f.part.0.lto_priv.0`); any other name
/// as it is.
pub fn without_clone_suffix(symbol: &str) -> &str {
    const CLONE_WORDS: &[&str] = &[
        "constprop",
        "isra",
        "part",
        "cold",
        "lto_priv",
        "localalias",
        "clone",
        "specialized",
    ];
    let Some((base, rest)) = symbol.split_once('.') else {
        return symbol;
    };
    let clone = !base.is_empty()
        && rest.split('.').all(|w| {
            CLONE_WORDS.contains(&w) || (!w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
        })
        && rest.split('.').any(|w| CLONE_WORDS.contains(&w));
    if clone {
        base
    } else {
        symbol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_clone_suffixes_come_off_c_symbols() {
        assert_eq!(without_clone_suffix("match_len.constprop.0"), "match_len");
        assert_eq!(without_clone_suffix("parse.isra.0"), "parse");
        assert_eq!(without_clone_suffix("main.cold"), "main");
        assert_eq!(without_clone_suffix("f.part.0.lto_priv.0"), "f");
        // Not clone suffixes: kept whole.
        assert_eq!(without_clone_suffix("match_len"), "match_len");
        assert_eq!(without_clone_suffix("foo.bar"), "foo.bar");
        assert_eq!(without_clone_suffix(".L123"), ".L123");
        assert_eq!(without_clone_suffix("x.0"), "x.0");
    }

    #[test]
    fn templates_parameters_and_return_types_come_off() {
        let sort = "void std::__introsort_loop<__gnu_cxx::__normal_iterator<app::Rec*, \
                    std::vector<app::Rec, std::allocator<app::Rec> > >, long, \
                    __gnu_cxx::__ops::_Iter_comp_iter<long app::churn<app::Rec>(std::vector<app::Rec, \
                    std::allocator<app::Rec> >&)::{lambda(app::Rec const&, app::Rec const&)#1}> >\
                    (__gnu_cxx::__normal_iterator<app::Rec*, std::vector<app::Rec> >, long) \
                    [clone .isra.0]";
        assert_eq!(qualified_name(sort), "std::__introsort_loop");
        assert_eq!(
            qualified_name("long app::churn<app::Rec>(std::vector<app::Rec>&)"),
            "app::churn"
        );
        assert_eq!(qualified_name("app::churn<app::Rec>"), "app::churn");
        assert_eq!(
            qualified_name("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector::push_back"
        );
        assert_eq!(qualified_name("main"), "main");
        assert_eq!(
            qualified_name("(anonymous namespace)::helper(int)"),
            "(anonymous namespace)::helper"
        );
        assert_eq!(last_component("(anonymous namespace)::helper"), "helper");
        assert_eq!(
            qualified_instance("long app::churn<app::Rec>(std::vector<app::Rec>&)"),
            "app::churn<app::Rec>"
        );
        assert_eq!(
            qualified_instance("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back"
        );
        assert_eq!(last_component("app::churn"), "churn");
        assert_eq!(last_component("main"), "main");
    }

    #[test]
    fn operators_keep_their_symbols() {
        assert_eq!(
            qualified_name("app::Rec::operator<(app::Rec const&) const"),
            "app::Rec::operator<"
        );
        assert_eq!(
            qualified_name("Functor::operator()() const"),
            "Functor::operator()"
        );
        assert_eq!(
            qualified_name("std::ostream::operator<<(int)"),
            "std::ostream::operator<<"
        );
        assert_eq!(
            qualified_name("operator new(unsigned long)"),
            "operator new"
        );
        assert_eq!(
            qualified_name("S::operator bool() const"),
            "S::operator bool"
        );
        assert_eq!(
            qualified_name("bool operator< <int>(Box<int> const&, Box<int> const&)"),
            "operator<"
        );
    }
}
