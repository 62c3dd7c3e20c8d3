//! Saved BHive-style measurements (`datasets/models/bhive-*.tsv`): one block
//! per line, `hex<TAB>measured cycles<TAB>llvm-mca cycles or -`, `#` lines
//! comments. Written by the `bhive` bench, read back to judge a changed
//! model on the same ground truth.

/// One saved block.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub hex: String,
    pub cycles: f64,
    /// llvm-mca's cycles as saved (`-` when it refused the block).
    pub mca: String,
}

/// The rows of a saved set; malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Row> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            let hex = f.next()?.to_string();
            let cycles = f.next()?.trim().parse().ok()?;
            let mca = f.next().unwrap_or("-").trim().to_string();
            Some(Row { hex, cycles, mca })
        })
        .collect()
}

/// Two saved sets as one: per block the lesser measurement — the harness
/// only ever measures too much (an interrupt, a busy sibling core), never
/// too little, so on a noisy host sets merged this way converge on the
/// undisturbed figure — and every block of either; the comment lines of
/// `new`. Also returns how many of `old`'s blocks `new` lowered.
pub fn merge_least(old: &str, new: &str) -> (String, usize) {
    let mut merged: std::collections::BTreeMap<String, Row> =
        parse(old).into_iter().map(|r| (r.hex.clone(), r)).collect();
    let mut lowered = 0;
    for row in parse(new) {
        match merged.get_mut(&row.hex) {
            Some(kept) if row.cycles < kept.cycles => {
                lowered += 1;
                // llvm-mca's figure is the same in every run: keep one.
                let mca = if row.mca == "-" {
                    kept.mca.clone()
                } else {
                    row.mca.clone()
                };
                *kept = Row { mca, ..row };
            }
            Some(kept) => {
                if kept.mca == "-" {
                    kept.mca = row.mca;
                }
            }
            None => {
                merged.insert(row.hex.clone(), row);
            }
        }
    }
    let mut out: String = new
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    for r in merged.values() {
        out += &format!("{}\t{:.4}\t{}\n", r.hex, r.cycles, r.mca);
    }
    (out, lowered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_the_lesser_measurement_of_every_block() {
        let old = "# hex\tmeasured\tmca\n4801d8\t1.2000\t1.00\n90\t0.2000\t-\n";
        let new = "# hex\tmeasured\tmca\n4801d8\t1.0100\t1.00\n90\t0.2500\t-\n31c0\t0.2500\t0.25\n";
        let (text, lowered) = merge_least(old, new);
        assert_eq!(lowered, 1);
        let rows = parse(&text);
        let get = |h: &str| rows.iter().find(|r| r.hex == h).unwrap().cycles;
        assert_eq!((get("4801d8"), get("90"), get("31c0")), (1.01, 0.2, 0.25));
        assert!(text.starts_with("# hex"));
        assert_eq!(rows.len(), 3);
    }
}
