/* The main of a test program that is one cmocka group, written once for the
 * test programs instead of once in each. Include it after <cmocka.h>. */
#ifndef SEQCL_TEST_MAIN_H
#define SEQCL_TEST_MAIN_H

/* int main(void) running the listed tests (cmocka_unit_test(...) entries and
 * the like) as one group with the group fixtures setup and teardown (NULL for
 * none). The array keeps the name `tests`, which cmocka prints as the group's
 * name; the exit status is cmocka's (the number of failed tests).
 *
 * An entry that is built only in some configurations cannot be written as an
 * #ifdef inside the list (a directive in a macro's arguments is undefined
 * behaviour): define a macro for it (the entry with its comma, or nothing)
 * above and list that macro. */
#define SQ_TEST_MAIN(setup, teardown, ...)                                                   \
  int main(void) {                                                                           \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                         \
    return cmocka_run_group_tests(tests, setup, teardown);                                   \
  }

#endif
