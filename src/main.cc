// The one tarn binary: dispatches to the subcommands of src/tools.
#include "tools/cli.h"

int main(int argc, char** argv) { return tarn::tools::run_cli(argc, argv); }
