//! The prfdata demo application (filled in by the demo issue).

fn main() {
    eprintln!("demo-app: not implemented yet");
    std::process::exit(2);
}
