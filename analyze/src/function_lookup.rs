//! Finding the function a user named: by plain, mangled or demangled name,
//! or by an address inside it, in the image given or in any profiled ELF
//! image; a name in several images asks which one.

use crate::elf_symbols::FunctionRange;
use crate::error::{AnalyzeError, Result};
use crate::image::{closest, parse_address, ElfImage};
use crate::jit_map::JitMap;
use crate::samples::{ImageSamples, Profile, SampleFilter};
use dcpi_collect::db::reader::ImageRow;
use std::path::Path;

pub struct Located {
    pub row: ImageRow,
    pub image: ElfImage,
    pub function: FunctionRange,
}

/// Opens the ELF image of a profile row (refusing a changed binary): at its
/// recorded path, or under the profile's symbol root (`--symfs DIR`:
/// DIR/recorded/path, then DIR/basename), as perf's --symfs does.
pub fn open_image(profile: &Profile, row: &ImageRow) -> Result<ElfImage> {
    let want = row.build_id.as_deref();
    if let Some(cand) = under_symfs(profile.symfs.as_deref(), &row.path) {
        let mut img = ElfImage::open(&cand, want)?;
        img.path = cand;
        return Ok(img);
    }
    ElfImage::open(&row.path, want)
}

/// Where an image recorded at `path` is under a symbol root, if it is
/// there: ROOT/recorded/path, then ROOT/basename (perf's --symfs).
pub fn under_symfs(root: Option<&std::path::Path>, path: &str) -> Option<String> {
    let root = root?;
    let rel = path.trim_start_matches('/');
    let base = path.rsplit('/').next().unwrap_or(rel);
    [root.join(rel), root.join(base)]
        .into_iter()
        .find(|c| c.exists())
        .map(|c| c.to_string_lossy().into_owned())
}

pub fn locate(
    profile: &Profile,
    filter: &SampleFilter,
    func: &str,
    image: Option<&str>,
) -> Result<Located> {
    if let Some(text) = image {
        let row = match profile.image_named(text, filter) {
            Ok(r) => r,
            Err(e) => {
                // An image with no samples can still be listed by its path.
                match profile.images.iter().find(|i| i.path == text) {
                    Some(r) => r.clone(),
                    None => return Err(e),
                }
            }
        };
        let image = open_image(profile, &row)?;
        let function = image.find_function(func)?;
        return Ok(Located {
            row,
            image,
            function,
        });
    }
    let mut found = Vec::new();
    let mut missed = Vec::new();
    let mut problems = Vec::new();
    for (row, _) in profile.images_with_samples(filter)? {
        let image = match open_image(profile, &row) {
            Ok(i) => i,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        let mut matching = image.functions_matching(func);
        match matching.len() {
            0 => missed.push(image),
            1 => found.push(Located {
                row,
                image,
                function: matching.pop().expect("one"),
            }),
            _ => {
                return Err(AnalyzeError::Usage(crate::image::several_functions(
                    func, &row.path, &matching,
                )))
            }
        }
    }
    // Every image's names, for the closest ones: only when none has it.
    let names: Vec<String> = if found.is_empty() && parse_address(func).is_none() {
        missed
            .iter()
            .flat_map(|i| i.symbols.functions().into_iter().map(|f| f.name))
            .collect()
    } else {
        Vec::new()
    };
    // An address may fall in several images' ranges, a name (`main`,
    // `memcmp@plt`) be in several images: keep those with samples there.
    // A name none of them has samples in still asks which.
    if found.len() > 1 {
        let mut with = Vec::new();
        let mut without = Vec::new();
        for l in found {
            let s = profile.image_samples(&l.row, filter)?;
            if function_samples(&l.image, &s, &l.function) > 0 {
                with.push(l);
            } else {
                without.push(l);
            }
        }
        found = if with.is_empty() && parse_address(func).is_none() {
            without
        } else {
            with
        };
    }
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        0 => {
            let kernel = profile
                .images
                .iter()
                .any(|i| i.kind == "kernel" || i.kind == "module")
                .then(crate::kernel_symbols::KernelSymbols::read);
            let in_kernel = kernel.as_ref().and_then(|k| k.image_of(func));
            let jit_pid = || {
                let tmp = Path::new("/tmp");
                profile.pids().into_iter().find(|&pid| {
                    JitMap::load(tmp, pid).is_some_and(|m| m.names().any(|n| n == func))
                })
            };
            let mut msg = if parse_address(func).is_some() {
                format!("no profiled image has a function at {func}; name the image with --image")
            } else if let Some(k) = in_kernel {
                format!(
                    "'{func}' is a kernel function ({k}): dcpi list and cpi analyze user-space \
                     ELF images only (the kernel's code is not read: no vmlinux or /proc/kcore); \
                     its samples are in `dcpi prof` and `dcpi report`"
                )
            } else if let Some(pid) = jit_pid() {
                format!(
                    "'{func}' is JIT code (named by /tmp/perf-{pid}.map): its instructions are in \
                     no file, so dcpi cannot disassemble or analyze it (perf annotate cannot \
                     either); its samples are in `dcpi prof`"
                )
            } else {
                format!(
                    "no function '{func}' in the profiled images; closest: {}",
                    closest(names.iter().map(|s| s.as_str()), func).join(", ")
                )
            };
            for p in problems {
                msg.push_str(&format!("\n  ({p})"));
            }
            Err(AnalyzeError::Usage(msg))
        }
        _ => Err(AnalyzeError::Usage(format!(
            "'{func}' is in several images; choose one with --image: {}",
            found
                .iter()
                .map(|l| l.row.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Samples (all events) inside a function.
pub fn function_samples(image: &ElfImage, s: &ImageSamples, f: &FunctionRange) -> u64 {
    let (Some(lo), Some(hi)) = (
        image.offset_of_vaddr(f.start),
        image.offset_of_vaddr(f.end.saturating_sub(1)),
    ) else {
        return 0;
    };
    s.by_offset
        .range(lo..=hi)
        .map(|(_, x)| x.counts.iter().sum::<u64>())
        .sum()
}

/// Functions of the image with samples, most samples first.
pub fn functions_with_samples(image: &ElfImage, s: &ImageSamples) -> Vec<(FunctionRange, u64)> {
    let mut per: std::collections::BTreeMap<u64, (FunctionRange, u64)> = Default::default();
    for (off, x) in &s.by_offset {
        let Some(va) = image.vaddr_of_offset(*off) else {
            continue;
        };
        let Some(f) = image.symbols.function_at(va) else {
            continue;
        };
        if f.end <= f.start || f.name.ends_with("@plt") {
            continue;
        }
        per.entry(f.start).or_insert((f, 0)).1 += x.counts.iter().sum::<u64>();
    }
    let mut v: Vec<(FunctionRange, u64)> = per.into_values().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.start.cmp(&b.0.start)));
    v
}
