//! Exact execution counts from `valgrind --tool=callgrind --dump-instr=yes`:
//! the `Ir` cost of each instruction address, per object. Callgrind writes
//! addresses as the object's ELF virtual addresses (PIE and shared libraries
//! included), so they compare directly with dcpi's.
//!
//! Handles name compression (`ob=(5) path` then `ob=(5)`), subposition
//! compression (`+3`, `-2`, `*`) and call lines, whose following cost line
//! is the call's inclusive cost and is not counted.

use std::collections::{BTreeMap, HashMap};

/// Ir per address, per object path.
pub type Counts = HashMap<String, BTreeMap<u64, u64>>;

#[derive(Debug, thiserror::Error)]
pub enum CallgrindError {
    #[error("not a callgrind profile with instruction positions (run callgrind with --dump-instr=yes): {0}")]
    Format(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn position(tok: &str, last: u64) -> Option<u64> {
    if tok == "*" {
        Some(last)
    } else if let Some(d) = tok.strip_prefix('+') {
        Some(last.wrapping_add(parse_num(d)?))
    } else if let Some(d) = tok.strip_prefix('-') {
        Some(last.wrapping_sub(parse_num(d)?))
    } else {
        parse_num(tok)
    }
}

fn parse_num(t: &str) -> Option<u64> {
    match t.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

/// Parses callgrind output text.
pub fn parse(text: &str) -> Result<Counts, CallgrindError> {
    let mut positions: Vec<String> = vec!["line".into()];
    let mut ir_index: Option<usize> = None;
    let mut names: HashMap<String, String> = HashMap::new();
    let mut object = String::new();
    let mut last = vec![0u64; 2];
    let mut skip_next = false;
    let mut out: Counts = HashMap::new();
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("positions:") {
            positions = p.split_whitespace().map(str::to_string).collect();
            last = vec![0; positions.len()];
            continue;
        }
        if let Some(e) = line.strip_prefix("events:") {
            ir_index = e.split_whitespace().position(|x| x == "Ir");
            continue;
        }
        if let Some(rest) = line.strip_prefix("ob=") {
            object = resolve(&mut names, "ob", rest);
            continue;
        }
        if let Some(rest) = line.strip_prefix("cob=") {
            resolve(&mut names, "ob", rest);
            continue;
        }
        if line.starts_with("calls=") {
            skip_next = true;
            continue;
        }
        let first = line.as_bytes().first().copied().unwrap_or(b'#');
        if !(first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'*') {
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        if toks.len() < positions.len() {
            continue;
        }
        for (k, t) in toks.iter().take(positions.len()).enumerate() {
            if let Some(v) = position(t, last[k]) {
                last[k] = v;
            }
        }
        if std::mem::take(&mut skip_next) {
            continue;
        }
        let Some(instr_pos) = positions.iter().position(|p| p == "instr") else {
            return Err(CallgrindError::Format(format!(
                "positions: {}",
                positions.join(" ")
            )));
        };
        let ir = ir_index
            .and_then(|i| toks.get(positions.len() + i))
            .and_then(|t| parse_num(t))
            .unwrap_or(0);
        *out.entry(object.clone())
            .or_default()
            .entry(last[instr_pos])
            .or_default() += ir;
    }
    if out.is_empty() {
        return Err(CallgrindError::Format("no cost lines".into()));
    }
    Ok(out)
}

/// `(5) name` defines id 5; `(5)` refers to it.
fn resolve(names: &mut HashMap<String, String>, kind: &str, rest: &str) -> String {
    let rest = rest.trim();
    if let Some(r) = rest.strip_prefix('(') {
        if let Some((id, name)) = r.split_once(')') {
            let key = format!("{kind}{id}");
            let name = name.trim();
            if name.is_empty() {
                return names.get(&key).cloned().unwrap_or_default();
            }
            names.insert(key, name.to_string());
            return name.to_string();
        }
    }
    rest.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_positions_and_calls() {
        let text = "positions: instr line\nevents: Ir\nob=(5) /bin/x\nfn=(1) f\n\
0x11b6 66 10\n+1 * 10\n+2 +1 7\ncob=(3) /lib/c.so\ncfn=(2) g\ncalls=7 0x996e0 3619\n* * 99999\n+5 +1 7\nob=(5)\n-8 * 3\n";
        let c = parse(text).unwrap();
        let x = &c["/bin/x"];
        assert_eq!(x[&0x11b6], 10 + 3);
        assert_eq!(x[&0x11b7], 10);
        assert_eq!(x[&0x11b9], 7);
        assert_eq!(x[&0x11be], 7);
        assert_eq!(x.len(), 4);
        assert!(parse("positions: line\nevents: Ir\n10 5\n").is_err());
    }
}
