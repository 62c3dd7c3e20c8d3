//! Text rendering of `dcpi list`: annotated disassembly, one column of
//! samples per event, source lines interleaved where they change, block
//! boundaries marked.

use crate::function_code::FunctionCode;
use crate::source_lines::SourceCache;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The listing as data (its JSON form).
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    pub image: String,
    pub function: String,
    pub start: String,
    pub end: String,
    pub events: Vec<String>,
    pub totals: BTreeMap<String, u64>,
    pub instructions: Vec<ListedInsn>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ListedInsn {
    pub addr: String,
    pub block: usize,
    pub block_start: bool,
    pub instruction: String,
    pub samples: BTreeMap<String, u64>,
    pub source: Option<String>,
}

pub fn listing(code: &FunctionCode) -> Listing {
    let cfg = &code.cfg;
    let mut instructions = Vec::with_capacity(cfg.insns.len());
    for (b, blk) in cfg.blocks.iter().enumerate() {
        for i in blk.insns.clone() {
            instructions.push(ListedInsn {
                addr: format!("{:#x}", cfg.insns[i].addr),
                block: b,
                block_start: i == blk.insns.start,
                instruction: cfg.insns[i].text.clone(),
                samples: code.samples_by_event(i),
                source: code.lines[i].as_ref().map(|(f, l)| format!("{f}:{l}")),
            });
        }
    }
    Listing {
        image: code.image_path.clone(),
        function: code.function.name.clone(),
        start: format!("{:#x}", code.function.start),
        end: format!("{:#x}", code.function.end),
        events: code.events.iter().map(|e| e.name.clone()).collect(),
        totals: code
            .events
            .iter()
            .zip(code.total_samples())
            .map(|(e, n)| (e.name.clone(), n))
            .collect(),
        instructions,
    }
}

pub fn render(l: &Listing) -> String {
    let mut out = String::new();
    let mut cache = SourceCache::default();
    let _ = writeln!(out, "image     {}", l.image);
    let _ = writeln!(out, "function  {} [{}-{}]", l.function, l.start, l.end);
    let totals: Vec<String> = l.totals.iter().map(|(e, n)| format!("{e} {n}")).collect();
    let _ = writeln!(out, "samples   {}", totals.join(", "));
    let _ = writeln!(out);
    let head: Vec<String> = l.events.iter().map(|e| format!("{e:>12}")).collect();
    let _ = writeln!(out, "{} {:>10}  instruction", head.join(" "), "addr");
    let width = l.events.len() * 13;
    let mut last_src: Option<&str> = None;
    for r in &l.instructions {
        if r.block_start {
            let _ = writeln!(out, "{:width$}── block {}", "", r.block);
        }
        if r.source.as_deref() != last_src {
            if let Some(src) = &r.source {
                let (file, line) = src.rsplit_once(':').unwrap_or((src, "0"));
                let text = line
                    .parse::<u32>()
                    .ok()
                    .and_then(|n| cache.text(file, n))
                    .map(|t| t.trim().to_string())
                    .unwrap_or_default();
                let short = file.rsplit('/').next().unwrap_or(file);
                let _ = writeln!(out, "{:width$}   {short}:{line}  {text}", "");
            }
            last_src = r.source.as_deref();
        }
        let cols: Vec<String> = l
            .events
            .iter()
            .map(|e| {
                let n = r.samples.get(e).copied().unwrap_or(0);
                if n == 0 {
                    format!("{:>12}", ".")
                } else {
                    format!("{n:>12}")
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "{} {:>10}  {}",
            cols.join(" "),
            r.addr.trim_start_matches("0x"),
            r.instruction
        );
    }
    out
}
