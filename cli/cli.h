/* Shared pieces of the seqcl command-line tool. */
#ifndef SEQCL_CLI_H
#define SEQCL_CLI_H

#include <seqcl/seqcl.h>

/* Exit statuses of SPEC §4. */
enum { CLI_OK = 0, CLI_RUNTIME = 1, CLI_USAGE = 2 };

/* Each command: argv[0] is the command name. Returns an exit status. */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_devices(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_forward(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_heatmap(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Prints "seqcl CMD: <message>" for a failed library call and returns the exit
 * status the status maps to (2 for bad input, 1 otherwise). */
int cli_fail(const char *cmd, seqcl_status st);
/* Prints "seqcl CMD: <printf message>" to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Output paths checked before any work (core/fileio.h's rules): pairs of
 * option name and path, NULL-terminated; a NULL path is skipped. Prints the
 * first problem and returns CLI_USAGE, else CLI_OK. */
int cli_check_outputs(const char *cmd, ...);
/* 1 when arg is "-h" or "--help". */
int cli_is_help(const char *arg);
/* Parses a whole decimal/float option value; returns 0 on success. */
int cli_parse_int(const char *s, long min, long max, long *out);
int cli_parse_float(const char *s, double *out);
/* 1 when SEQCL_LOG=info or -v was given (cli_verbose set by main). */
extern int cli_verbose;
/* SIGINT sets a flag (cli_interrupted) instead of ending the process; a second
 * SIGINT ends it. Exit status after a clean stop on SIGINT: 130 (128 + 2). */
void cli_interrupt_install(void);
int cli_interrupted(void);
enum { CLI_INTERRUPTED = 130 };

#endif
