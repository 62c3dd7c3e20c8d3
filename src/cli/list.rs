//! `dcpi list`: annotated disassembly of a function with its samples.

use super::function_args::SampleArgs;
use super::Format;
use clap::Args;
use dcpi_analyze::views::list_text;

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Function: plain, mangled or demangled name, qualified name (app::churn), or an address inside it (0x...); default: the function with most samples.
    #[arg(long)]
    pub func: Option<String>,
    #[command(flatten)]
    pub samples: SampleArgs,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: ListArgs) -> anyhow::Result<i32> {
    let profile = a.samples.open()?;
    let (args, func) = a.samples.function_or_hottest(a.func.as_deref(), "list")?;
    let (_, _, code) = args.load_function(&profile, &func)?;
    let l = list_text::listing(&code);
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&l)?),
        Format::Text => print!("{}", list_text::render(&l)),
    }
    Ok(0)
}
