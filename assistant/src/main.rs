//! `fleetwatch`: parses the command line and hands over to the library.
#![forbid(unsafe_code)]

use clap::Parser as _;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FLEETWATCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    fleetwatch_signin::tls::install_provider();
    let cli = fleetwatch::cli::Cli::parse();
    let code = fleetwatch::cli::run(cli).await;
    std::process::exit(code);
}
