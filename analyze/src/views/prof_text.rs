//! Text rendering of the `prof` report, in dcpiprof's and Prospect's style.

use crate::prof::{ProfReport, RunStatistics};
use std::fmt::Write;

/// Which sections to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    pub stats: bool,
    pub images: bool,
    pub procedures: bool,
    pub processes: bool,
    pub groups: bool,
}

impl Default for Sections {
    fn default() -> Self {
        Sections {
            stats: true,
            images: true,
            procedures: true,
            processes: true,
            groups: true,
        }
    }
}

/// Characters of a process's command line the processes table shows (a
/// daemon's can run to kilobytes of arguments); `--format json` has it all.
const COMMAND_WIDTH: usize = 120;

/// `text` cut to `width` characters, with `…` where it was cut.
fn shortened(text: &str, width: usize) -> String {
    match text.char_indices().nth(width) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

fn secs(s: Option<f64>) -> String {
    s.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

fn run_stats(out: &mut String, r: &RunStatistics) {
    let run = &r.run;
    let stat = |k: &str| r.stats.get(k).copied().unwrap_or(0);
    let _ = writeln!(
        out,
        "Statistics of run {} ({} mode{}): {}",
        run.id,
        run.mode,
        if run.complete { "" } else { ", incomplete" },
        run.command.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        out,
        "  started {}, duration {} s, exit status {}{}",
        run.started_at,
        secs(run.duration_s),
        run.exit_status
            .map(|s| match dcpi_collect::launcher::killed_by(s) {
                Some(how) => format!("{s} ({how})"),
                None => s.to_string(),
            })
            .unwrap_or_else(|| "-".into()),
        if run.interrupted { ", interrupted" } else { "" }
    );
    let _ = writeln!(
        out,
        "  host {} ({} family {} model {}), {} CPUs, {}, core clock {} GHz",
        run.cpu_model_name.as_deref().unwrap_or("?"),
        run.cpu_vendor.as_deref().unwrap_or("?"),
        run.cpu_family.unwrap_or(0),
        run.cpu_model.unwrap_or(0),
        run.online_cpus.unwrap_or(0),
        run.kernel.as_deref().unwrap_or("?"),
        run.core_hz
            .map(|h| format!("{:.3}", h / 1e9))
            .unwrap_or_else(|| "?".into()),
    );
    if let Some(kept) = crate::samples::sampling_kept(run) {
        let _ = writeln!(
            out,
            "  sampling took {:.1} % of the sampled code's time (measured at the end of the run); timer samples count {:.3} GHz of its cycles",
            100.0 * (1.0 - kept),
            crate::samples::sampled_core_hz(run).unwrap_or(0.0) / 1e9
        );
    }
    if let Some(share) = run.core_share {
        let _ = writeln!(
            out,
            "  the command had {:.0} % of an idle core (a throughput probe on its CPU through the run; less: a busy SMT sibling on the host, or a lower clock)",
            100.0 * share
        );
    }
    for e in &r.events {
        let rate = match (e.period, e.frequency) {
            (Some(p), _) => format!(
                "period {p} {}{}",
                e.unit,
                if e.period_jitter > 0.0 {
                    format!(" ±{:.0}%", e.period_jitter * 100.0)
                } else {
                    String::new()
                }
            ),
            (_, Some(f)) => format!("{f} Hz"),
            _ => String::new(),
        };
        let fb = e
            .fallback_reason
            .as_ref()
            .map(|f| format!(" (fallback: {f})"))
            .unwrap_or_default();
        let arrow = if e.requested != e.used {
            format!("{} -> {}", e.requested, e.used)
        } else {
            e.used.clone()
        };
        let _ = writeln!(out, "  event {arrow}: {rate}, {} samples{fb}", e.samples);
        // Said where it changes the cycles a sample stands for.
        if let (Some(kept), Some(cpu), Some(sampled)) = (
            e.steal_kept.filter(|k| *k < 0.99),
            run.target_cpu_s,
            e.sampled_s,
        ) {
            let _ = writeln!(
                out,
                "    the command ran {cpu:.3} s of the {sampled:.3} s its samples cover (steal over the run {} s): each counts {:.1} % of its period",
                secs(run.steal_s),
                100.0 * kept
            );
        }
    }
    let _ = writeln!(
        out,
        "  samples {} (user {}, kernel {}), lost {} records + {} samples, throttled {}",
        stat("samples"),
        stat("user_samples"),
        stat("kernel_samples"),
        stat("lost_records"),
        stat("lost_samples"),
        stat("throttles")
    );
    let _ = writeln!(
        out,
        "  hash table: {} lookups, {} hit rate, {} misses, {} evictions; overflow: {} hand-offs, {} waits; {} flushes; {} processes, {} images",
        stat("hash_lookups"),
        r.hash_hit_rate.map(|h| format!("{:.2}%", h * 100.0)).unwrap_or_else(|| "-".into()),
        stat("hash_misses"),
        stat("hash_evictions"),
        stat("overflow_handoffs"),
        stat("overflow_handoff_waits"),
        stat("daemon_flushes"),
        stat("processes"),
        stat("images"),
    );
}

/// Renders the report.
pub fn render(r: &ProfReport) -> String {
    render_sections(r, Sections::default())
}

pub fn render_sections(r: &ProfReport, s: Sections) -> String {
    let mut out = String::new();
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if s.stats {
        for run in &r.runs {
            run_stats(&mut out, run);
            out.push('\n');
        }
    }
    let heads: Vec<String> = r.events.iter().map(|e| format!("{:>12}", e.name)).collect();
    let head = heads.join(" ");
    let cols = |v: &[u64]| {
        v.iter()
            .map(|n| format!("{n:>12}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let sys = &r.system;
    let _ = writeln!(
        out,
        "System: {} samples{}; user {}, kernel {}; {} of {} processes with samples, {} images",
        sys.samples.get(r.sort_event).copied().unwrap_or(0),
        sys.seconds
            .map(|v| format!(" ({v:.3} s extrapolated)"))
            .unwrap_or_default(),
        sys.user_samples,
        sys.kernel_samples,
        sys.processes_with_samples,
        sys.processes_seen,
        sys.images
    );
    if s.images {
        let _ = writeln!(out, "\nImages:\n{head}       %    cum%  image");
        for i in &r.images {
            let _ = writeln!(
                out,
                "{} {:>7.2} {:>7.2}  {}",
                cols(&i.samples),
                i.percent,
                i.cumulative_percent,
                i.path
            );
        }
    }
    if s.procedures {
        let _ = writeln!(
            out,
            "\nProcedures:\n{head}       %    cum%  procedure [image]"
        );
        for p in &r.procedures {
            let image = if p.image.starts_with('[') {
                p.image.clone()
            } else {
                format!("[{}]", p.image)
            };
            let _ = writeln!(
                out,
                "{} {:>7.2} {:>7.2}  {} {image}",
                cols(&p.samples),
                p.percent,
                p.cumulative_percent,
                p.procedure,
            );
        }
    }
    if s.processes {
        let _ = writeln!(
            out,
            "\nProcesses:\n{:<24} {:>8} {:>10} {:>10} {:>10} {:>10} {:>7}  command",
            "appid", "pid", "user", "kernel", "user s", "kernel s", "%"
        );
        for p in &r.processes {
            let _ = writeln!(
                out,
                "{:<24} {:>8} {:>10} {:>10} {:>10} {:>10} {:>7.2}  {}",
                p.appid,
                p.pid,
                p.user_samples,
                p.kernel_samples,
                secs(p.user_seconds),
                secs(p.kernel_seconds),
                p.percent,
                shortened(p.cmdline.as_deref().unwrap_or(""), COMMAND_WIDTH)
            );
        }
    }
    if s.groups {
        let _ = writeln!(
            out,
            "\nApplications (all instances of a command):\n{:<16} {:>9} {:>10} {:>10} {:>10} {:>7}",
            "command", "instances", "user", "kernel", "seconds", "%"
        );
        for g in &r.groups {
            let _ = writeln!(
                out,
                "{:<16} {:>9} {:>10} {:>10} {:>10} {:>7.2}",
                g.comm,
                g.instances,
                g.user_samples,
                g.kernel_samples,
                secs(g.seconds),
                g.percent
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shortened;

    #[test]
    fn long_command_lines_are_cut_with_an_ellipsis() {
        assert_eq!(shortened("sleep 2", 120), "sleep 2");
        assert_eq!(shortened("abcdef", 3), "abc…");
        assert_eq!(shortened("äöüß", 2), "äö…");
        assert_eq!(shortened("abc", 3), "abc");
    }
}
