/* Shared pieces of the seqcl command-line tool. */
#ifndef SEQCL_CLI_H
#define SEQCL_CLI_H

#include <seqcl/seqcl.h>

/* Exit statuses of SPEC §4. */
enum { CLI_OK = 0, CLI_RUNTIME = 1, CLI_USAGE = 2 };

/* Each command: argv[0] is the command name. Returns an exit status. */
typedef int (*cli_command_fn)(int argc, char **argv);

/* Defines the command function name (a cli_command_fn) of a command whose
 * options parse into a struct of type args_type, zeroed first:
 * parse(argc, argv, &args) sets what is not 0 by default and what is given,
 * and gives 0, -1 after printing the help (exit status 0) or an exit status
 * after a usage error; run(&args) then does the work. One definition, so
 * that every such command ends alike on help and on a bad option. */
#define CLI_COMMAND(name, args_type, parse, run)                         \
  int name(int argc, char **argv) {                                      \
    args_type args = {0};                                                \
    const int parsed = parse(argc, argv, &args);                         \
    return parsed < 0 ? CLI_OK : parsed ? parsed : run(&args);           \
  }

int cmd_devices(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_forward(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_heatmap(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_vocab(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_probe(int argc, char **argv);

/* Prints "seqcl CMD: <message>" for a failed library call and returns the exit
 * status the status maps to (2 for bad input, 1 otherwise). */
int cli_fail(const char *cmd, seqcl_status st);
/* cli_fail for an output written after the work (disk full, a failed
 * rename): a runtime failure, exit 1, whatever the status (SEQCL_ERR_IO is
 * otherwise bad input, exit 2: a file that cannot be read). */
int cli_fail_output(const char *cmd, seqcl_status st);
/* cli_fail for a long library call (decode, forward, training) that failed
 * with st: when it ran out of host or device memory, the library's message
 * is followed by the hint (printf format and arguments: the sizes, and the
 * option to lower). */
int cli_fail_memory(const char *cmd, seqcl_status st, const char *hint, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* cli_fail for a failure to select or open a device: when the selector came
 * from SEQCL_DEVICE (device NULL or empty), the message says so. */
int cli_fail_device(const char *cmd, seqcl_status st, const char *device);
/* Opens the device (printing it to stderr when verbose); an exit status. */
int cli_ctx_open(const char *cmd, const char *device, seqcl_ctx **ctx);
/* Prints "seqcl CMD: <printf message>" to stderr and returns status. */
int cli_error(int status, const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* That message for bad usage or input: returns CLI_USAGE. */
#define cli_usage_error(cmd, ...) cli_error(CLI_USAGE, cmd, __VA_ARGS__)
/* That message for a failure that is not the user's (a write that failed, no
 * temporary folder): returns CLI_RUNTIME. */
#define cli_runtime_error(cmd, ...) cli_error(CLI_RUNTIME, cmd, __VA_ARGS__)
/* Output paths checked before any work (core/fileio.h's rules): pairs of
 * option name and path, NULL-terminated; a NULL path is skipped. Prints the
 * first problem and returns CLI_USAGE, else CLI_OK. */
int cli_check_outputs(const char *cmd, ...);
/* 1 when arg is "-h" or "--help". */
int cli_is_help(const char *arg);
/* Parses a whole decimal/float option value; returns 0 on success. */
int cli_parse_int(const char *s, long min, long max, long *out);
int cli_parse_float(const char *s, double *out);
/* The one parser of numeric option values: on failure prints
 * "seqcl CMD: --opt: 'V' is not a positive integer" (or "an integer in
 * [MIN, MAX]", "a positive number", ...) and returns CLI_USAGE. */
int cli_long(const char *cmd, const char *opt, const char *v, long min, long max, long *out);
typedef enum { CLI_ANY_NUMBER, CLI_POSITIVE, CLI_NON_NEGATIVE } cli_range;
int cli_double(const char *cmd, const char *opt, const char *v, cli_range r, double *out);
/* Takes -v/--verbose and -q/--quiet out of argv wherever they stand and splits
 * "--opt=value" in two (cli_args.c). Returns 0, or -1 when out of memory. */
int cli_normalize_args(int *argc, char ***argv);
/* Validates the SEQCL_* variables the command line depends on; an exit status. */
int cli_check_env(void);
/* 1 when SEQCL_LOG=info/debug or -v was given; cli_quiet: -q/--quiet (no
 * progress output). Both set by main. */
extern int cli_verbose, cli_quiet;
/* SIGINT sets a flag (cli_interrupted) instead of ending the process; a second
 * SIGINT ends it. Exit status after a clean stop on SIGINT: 130 (128 + 2). */
void cli_interrupt_install(void);
int cli_interrupted(void);
/* 1 when st is a library call stopping because of that SIGINT. */
int cli_stopped_by_sigint(seqcl_status st);
enum { CLI_INTERRUPTED = 130 };

#endif
