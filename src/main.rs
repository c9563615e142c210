fn main() {
    let code = eden::main_with_args(std::env::args_os().collect());
    std::process::exit(code);
}
