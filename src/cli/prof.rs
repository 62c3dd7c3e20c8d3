pub fn run(_a: ProfArgs) -> anyhow::Result<i32> {
    Ok(0)
}
#[derive(clap::Args, Debug)]
pub struct ProfArgs {}
