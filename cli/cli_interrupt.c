/* Ctrl-C during long commands: the first SIGINT only sets a flag that the
 * command polls between steps (so it can save and exit cleanly); the handler
 * then restores the default action, so a second Ctrl-C ends the process at once. */
#include <signal.h>
#include <string.h>

#include "cli.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  signal(SIGINT, SIG_DFL);
}

void cli_interrupt_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  interrupted = 0;
  sigaction(SIGINT, &sa, NULL);
}

int cli_interrupted(void) { return interrupted != 0; }

int cli_stopped_by_sigint(seqcl_status st) { return st == SEQCL_ERR_CANCELLED && interrupted; }
