//! `dcpi model`: the best-case pipeline model of a block, like llvm-mca.

use super::Format;
use anyhow::{bail, Context};
use clap::Args;
use dcpi_analyze::image::ElfImage;
use dcpi_analyze::views::model_text;
use dcpi_models::block::{decode, parse_hex};
use dcpi_models::machine::Machine;
use dcpi_models::schedule::{analyze, Options, RepeatMode};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Machine code as hex ("48 01 d8 ...").
    #[arg(long, conflicts_with_all = ["asm", "image"])]
    pub hex: Option<String>,
    /// An assembly file (GNU as, AT&T syntax; Intel with --intel), assembled with `as`.
    #[arg(long, conflicts_with = "image")]
    pub asm: Option<PathBuf>,
    /// An ELF image to take the block from (with --func or --range).
    #[arg(long)]
    pub image: Option<String>,
    /// A function of --image (plain, mangled, demangled or qualified name).
    #[arg(long, requires = "image", conflicts_with = "range")]
    pub func: Option<String>,
    /// START-END ELF virtual addresses (hex, as objdump prints them).
    #[arg(long, requires = "image")]
    pub range: Option<String>,
    /// Treat the block as a loop body (its last instruction branches back).
    #[arg(long = "loop")]
    pub as_loop: bool,
    /// Machine description: golden-cove, zen5, zen4, zen3, skylake, generic, or a .toml file (default: the host's).
    #[arg(long)]
    pub cpu: Option<String>,
    /// Iterations to simulate (default: enough for a steady state).
    #[arg(long, default_value_t = 0)]
    pub iterations: usize,
    /// Intel syntax instead of AT&T (output, and the --asm file's input).
    #[arg(long)]
    pub intel: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

fn hex_addr(s: &str) -> anyhow::Result<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16)
        .with_context(|| format!("bad address '{s}'"))
}

/// The `.text` bytes of the assembly file at `path` (Intel syntax without
/// register prefixes with `intel`, as llvm-mca's input often is).
fn assemble(path: &PathBuf, intel: bool) -> anyhow::Result<Vec<u8>> {
    use object::{Object, ObjectSection};
    let dir = std::env::temp_dir().join(format!("dcpi-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let obj = dir.join("block.o");
    let mut cmd = std::process::Command::new("as");
    cmd.arg("--64");
    if intel {
        cmd.args(["-msyntax=intel", "-mnaked-reg"]);
    }
    let out = cmd.arg("-o").arg(&obj).arg(path).output();
    let data = std::fs::read(&obj);
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.context("running `as` (install binutils)")?;
    if !out.status.success() {
        let hint = if intel {
            "read as Intel syntax (--intel)"
        } else {
            "read as AT&T syntax; give --intel for Intel syntax"
        };
        bail!(
            "assembling {} failed ({hint}):\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let data = data.context("reading the assembled object")?;
    let file = object::File::parse(&*data).context("reading the assembled object")?;
    let text = file
        .section_by_name(".text")
        .context("no .text in the assembled object")?;
    Ok(text.data()?.to_vec())
}

pub fn run(a: ModelArgs) -> anyhow::Result<i32> {
    let (bytes, addr) = if let Some(h) = &a.hex {
        (parse_hex(h)?, 0)
    } else if let Some(p) = &a.asm {
        (assemble(p, a.intel)?, 0)
    } else if let Some(img) = &a.image {
        let image = ElfImage::open(img, None)?;
        let (start, end) = match (&a.func, &a.range) {
            (Some(f), _) => {
                let f = image.find_function(f)?;
                (f.start, f.end)
            }
            (None, Some(r)) => {
                let (s, e) = r.split_once('-').context("--range is START-END")?;
                (hex_addr(s)?, hex_addr(e)?)
            }
            _ => bail!("--image needs --func NAME or --range START-END"),
        };
        if end <= start {
            bail!("empty range {start:#x}-{end:#x}");
        }
        let bytes = image
            .bytes(start, (end - start) as usize)
            .with_context(|| {
                format!("{start:#x}-{end:#x} is not inside one loaded segment of {img}")
            })?;
        (bytes.to_vec(), start)
    } else {
        bail!("give the block with --hex BYTES, --asm FILE, or --image PATH with --func/--range");
    };
    let block = decode(&bytes, addr, a.intel)?;
    let machine = match &a.cpu {
        Some(name) => Machine::by_name(name)?,
        None => Machine::host(),
    };
    let mode = if a.as_loop {
        RepeatMode::Loop
    } else {
        RepeatMode::Unrolled
    };
    let analysis = analyze(
        &machine,
        &block,
        Options {
            mode,
            iterations: a.iterations,
        },
    );
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&analysis)?),
        Format::Text => print!("{}", model_text::render(&analysis)),
    }
    Ok(0)
}
