/* SPDX-License-Identifier: Apache-2.0 */
/* Property values given by reference: "env:NAME" (an environment
 * variable) or "file:PATH" (a file readable by its owner only), so that a
 * secret never has to be written on a command line or into a config file
 * (docs/security.md). */
#ifndef KD_SECRET_H
#define KD_SECRET_H

#include <stddef.h>

#include <kdelay/error.h>

/* The size a referenced file may have. */
#define KD_SECRET_FILE_MAX (64 * 1024)

/* Non-zero when value is a reference (starts with "env:" or "file:"). */
int kd_secret_is_ref(const char *value);

/* The value of property `name` that `value` refers to, into *outp (caller
 * frees, after wiping: kd_secret_free); a value that is no reference is
 * copied. A file's content loses its trailing newlines; a file that is not
 * a regular file, is readable or writable by group or others, is empty or
 * larger than KD_SECRET_FILE_MAX is refused. Errors name the property and
 * the variable or path, never the value. */
kdelay_err_t kd_secret_resolve(const char *name, const char *value, char **outp,
                               char *errstr, size_t errstr_size);

/* Opens path for reading as a secret file: without waiting, so that a
 * FIFO or a device never blocks the caller (kd_secret_file_check then
 * refuses it). The fd (close it), or -1 with errno. */
int kd_secret_open(const char *path);

/* Checks that path is a regular file only its owner may read or write;
 * KDELAY_ERR_CONFIG with the reason (naming `what` and the path) if not. */
kdelay_err_t kd_secret_file_check(const char *what, const char *path, int fd,
                                  char *errstr, size_t errstr_size);

/* 1 when mode (a st_mode) lets group or others read, write or execute
 * the file: kd_secret_file_check refuses a referenced file with such a
 * mode, and a Kafka client properties file holding a secret by value
 * (kafka_config) is refused alike. */
int kd_secret_mode_shared(unsigned mode);

/* 1 when a property named name holds a secret when given by value: its
 * name holds "password", "passphrase" or "secret" (sasl.password,
 * ssl.key.password, ssl.keystore.password, sasl.oauthbearer.client.secret),
 * or ends with "key.pem" (ssl.key.pem, a private key inline). Paths to
 * keys (ssl.key.location) are not secrets: the key file guards itself. */
int kd_secret_name(const char *name);

/* Overwrites s with zeros and frees it. */
void kd_secret_free(char *s);

#endif
