//! `fleetwatch-demo`: what `fleetwatch demo` runs. Parses the command line and hands over to
//! the library.
#![forbid(unsafe_code)]

use clap::Parser;

/// The Fleetwatch offline demo: a simulated fleet, a rule-based model stand-in (not AI), the
/// real executor, the approval page and a prompt, all on this machine. Everything it starts
/// and writes is removed when it ends. `fleetwatch demo` runs this program.
#[derive(Debug, Parser)]
#[command(name = "fleetwatch-demo", version)]
struct Args {
    /// Run a fixed scenario instead of the prompt and exit 0 only if every step happened as
    /// expected.
    #[arg(long)]
    script: bool,
    /// The API the model stand-in speaks, as a real model would: anthropic (the Messages API)
    /// or openai (the Chat Completions API a team's own model server speaks).
    #[arg(long, value_name = "anthropic|openai", default_value = "anthropic", value_parser = model_api)]
    model_api: fleetwatch::model::ModelApi,
}

fn model_api(text: &str) -> Result<fleetwatch::model::ModelApi, String> {
    fleetwatch::model::ModelApi::parse(text)
        .ok_or_else(|| format!("{text:?}: give anthropic or openai"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FLEETWATCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    std::process::exit(fleetwatch_demo::run(args.script, args.model_api).await);
}
