//! The `dsh-refs` binary: see [`dsh_refs::cli`].

fn main() -> std::process::ExitCode {
    dsh_refs::cli::main()
}
