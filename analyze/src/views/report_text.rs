//! Text rendering of Prospect's report.

use crate::report::ProspectReport;
use std::fmt::Write;

fn secs(s: Option<f64>) -> String {
    s.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

pub fn render(r: &ProspectReport) -> String {
    let mut o = String::new();
    let s = &r.statistics;
    let _ = writeln!(
        o,
        "Statistics of run {} ({} mode{}){}",
        s.run_id,
        s.mode,
        if s.complete { "" } else { ", incomplete" },
        s.command
            .as_deref()
            .map(|c| format!(": {c}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "  {} .. {}, {} s on {} CPUs; epochs {:?}",
        s.started_at,
        s.ended_at.as_deref().unwrap_or("(running)"),
        secs(s.duration_s),
        s.cpus.map(|c| c.to_string()).unwrap_or_else(|| "?".into()),
        s.epochs
    );
    let _ = writeln!(
        o,
        "  event {} (asked {}){}{}",
        s.event,
        s.event_requested,
        s.period
            .map(|p| format!(", period {p} {}", s.unit))
            .unwrap_or_default(),
        s.frequency
            .map(|f| format!(", {f} Hz per CPU"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "  hits {}: user {}, system {} (idle task {}); lost {}; {} samples/s per CPU",
        s.samples,
        s.user_hits,
        s.system_hits,
        s.idle_hits,
        s.lost,
        s.rate_per_cpu
            .map(|r| format!("{r:.0}"))
            .unwrap_or_else(|| "-".into())
    );
    let _ = writeln!(
        o,
        "  kernel links: {} system hits charged to the process they served, {} asynchronous hits unlinked",
        s.charged_hits, s.unlinked_async
    );
    let _ = writeln!(o, "  note: {}", r.idle_caveat);
    for w in &r.warnings {
        let _ = writeln!(o, "  warning: {w}");
    }

    let _ = writeln!(
        o,
        "\nExtrapolated summary of processes (≥ {} % of hits)",
        r.threshold_percent
    );
    let _ = writeln!(
        o,
        "  {:>9} {:>10} {:>9} {:>10} {:>8} {:>8} {:>6}  process",
        "user hits", "user s", "sys hits", "sys s", "async+", "async-", "%"
    );
    for p in &r.processes {
        let _ = writeln!(
            o,
            "  {:>9} {:>10} {:>9} {:>10} {:>8} {:>8} {:>6.2}  {} (pid {})",
            p.user_hits,
            secs(p.user_seconds),
            p.system_hits,
            secs(p.system_seconds),
            p.charged_in,
            p.charged_out,
            p.percent,
            p.appid,
            p.pid
        );
    }
    if r.below_threshold.0 > 0 {
        let _ = writeln!(
            o,
            "  ({} more processes under the threshold, {} hits)",
            r.below_threshold.0, r.below_threshold.1
        );
    }
    let _ = writeln!(
        o,
        "  async+ = kernel work done elsewhere for the process; async- = work done in it for others"
    );

    for p in &r.profiles {
        let _ = writeln!(
            o,
            "\nProfile of {} (pid {}), {} hits",
            p.appid, p.pid, p.hits
        );
        for row in &p.rows {
            let _ = writeln!(
                o,
                "  {:>8} {:>6.2}%  {}{}{}",
                row.hits,
                row.percent,
                row.label,
                if row.kernel && row.image != "[kernel.kallsyms]" {
                    format!(" [{}]", row.image)
                } else if !row.kernel {
                    format!("  ({})", row.image)
                } else {
                    String::new()
                },
                row.link
                    .as_deref()
                    .map(|l| format!("  <- {l}"))
                    .unwrap_or_default()
            );
        }
    }

    let _ = writeln!(o, "\nGlobal kernel profile ({} system hits)", s.system_hits);
    for k in &r.kernel_profile {
        let _ = writeln!(
            o,
            "  {:>8} {:>6.2}% {:>9} s  {}{}",
            k.hits,
            k.percent,
            secs(k.seconds),
            k.procedure,
            if k.image == "[kernel.kallsyms]" {
                String::new()
            } else {
                format!(" [{}]", k.image)
            }
        );
    }
    if !r.links.is_empty() {
        let _ = writeln!(o, "\nCharged kernel work by link");
        for l in &r.links {
            let _ = writeln!(o, "  {:>8}  {}", l.hits, l.link);
        }
    }
    o
}
