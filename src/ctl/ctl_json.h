/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl's --json output on stdout, one object a line: a verb with one
 * answer prints one JSON document (one line); a verb that streams (tasks
 * list, dead list, cancel -, dead replay) prints JSON lines, one object
 * per item. Each verb's --help says which.
 *
 * Verbs build their answers with cJSON and print them only through this
 * file, which writes every string, object keys included, by one rule
 * (kd_ctl_json_string), so that the output is always valid JSON in valid
 * UTF-8 whatever bytes an id, a topic, a key or an error message holds
 * (README.md, "kdelayctl exit codes"). */
#ifndef KD_CTL_JSON_H
#define KD_CTL_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The JSON string literal, quotes included, of the len bytes at s (NUL
 * bytes too), malloc'ed (caller frees); NULL when out of memory. The
 * rule: a well-formed UTF-8 character (Unicode table 3-7) is copied as
 * it is, except '"' and '\' (\" and \\) and the control characters
 * U+0000..U+001F (\b, \t, \n, \f, \r, else \u00XX); each byte that does
 * not belong to a well-formed UTF-8 character (a stray continuation byte,
 * C0, C1, F5..FF, each byte of a sequence cut short, an overlong form, a
 * surrogate or a code point above U+10FFFF) becomes \ufffd, the
 * replacement character: one per byte. */
char *kd_ctl_json_string(const char *s, size_t len);

/* o as one line of JSON without its newline, every string and key written
 * by kd_ctl_json_string's rule, numbers as cJSON writes them (NaN and
 * infinities as null); malloc'ed (caller frees). NULL when o is NULL or
 * out of memory. */
char *kd_ctl_json_text(const cJSON *o);

/* Prints o (kd_ctl_json_text) and a newline on stdout; o is kept. 0, or
 * -1 when nothing could be printed (o NULL, out of memory). */
int kd_ctl_json_write(const cJSON *o);

/* kd_ctl_json_write, then deletes o (o may be NULL: out of memory,
 * nothing printed). 0, or -1 when nothing could be printed. */
int kd_ctl_json_print(cJSON *o);

/* 1 when argv (argv[0] the verb) holds "--json" before any "--": a verb
 * that promises one JSON object whatever happens asks it before its
 * options are parsed, so that a usage error is answered in JSON too. */
int kd_ctl_json_asked(int argc, char **argv);

#endif
