//! The TLS crypto provider, chosen once per process.
//!
//! reqwest is built without a provider of its own (its default brings the aws-lc C library);
//! rustls then needs one installed before the first HTTP client is built, or building it
//! panics. Both processes use `ring`: pure Rust and assembly, no C toolchain in the build and
//! no C library for a reviewer to account for. Every function in this workspace that builds an
//! HTTP client calls [`install_provider`] first, so no caller can forget it.

/// Installs `ring` as the process's rustls provider. Cheap and idempotent: a provider already
/// installed (by an earlier call, from any thread) is kept.
pub fn install_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread installing the same provider is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A reqwest client builder, with the provider installed.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_after_install() {
        super::install_provider();
        super::install_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        assert!(super::client_builder().build().is_ok());
    }
}
