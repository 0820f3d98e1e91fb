/* SPDX-License-Identifier: Apache-2.0 */
/* Property values given by reference: "env:NAME" and "file:PATH". */
#define _POSIX_C_SOURCE 200809L
#include "kd_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kd_log.h"
#include "kd_util.h"

static const char kd_env_ref[] = "env:";
static const char kd_file_ref[] = "file:";

int kd_secret_is_ref(const char *value)
{
        return value && (!strncmp(value, kd_env_ref, sizeof(kd_env_ref) - 1) ||
                         !strncmp(value, kd_file_ref, sizeof(kd_file_ref) - 1));
}

void kd_secret_free(char *s)
{
        if (!s)
                return;
        for (volatile char *c = s; *c; c++)
                *c = '\0';
        free(s);
}

int kd_secret_mode_shared(unsigned mode)
{
        return (mode & (S_IRWXG | S_IRWXO)) != 0;
}

int kd_secret_name(const char *name)
{
        static const char pem[] = "key.pem";
        size_t n = strlen(name);
        return strstr(name, "password") || strstr(name, "passphrase") ||
               strstr(name, "secret") ||
               (n >= sizeof(pem) - 1 &&
                !strcmp(name + n - (sizeof(pem) - 1), pem));
}

static int env_name_ok(const char *s)
{
        if (!*s || (*s >= '0' && *s <= '9'))
                return 0;
        for (; *s; s++)
                if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
                        return 0;
        return 1;
}

kdelay_err_t kd_secret_file_check(const char *what, const char *path, int fd,
                                  char *errstr, size_t errstr_size)
{
        struct stat st;
        char q[600];
        kd_log_quote(path, q, sizeof(q));
        if (fstat(fd, &st))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: cannot stat %s: %s", what, q,
                               strerror(errno));
        if (!S_ISREG(st.st_mode))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: %s is not a regular file (a secret is "
                               "read only from one)",
                               what, q);
        if (kd_secret_mode_shared((unsigned)st.st_mode))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: %s holds a secret but its mode is %04o: "
                               "group and others may not read or write it "
                               "(chmod 600 or 400)",
                               what, q, (unsigned)(st.st_mode & 07777));
        if (st.st_size > KD_SECRET_FILE_MAX)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: %s is larger than %d bytes", what, q,
                               KD_SECRET_FILE_MAX);
        return KDELAY_OK;
}

int kd_secret_open(const char *path)
{
        /* O_NONBLOCK: opening a FIFO waits for a writer, a device may wait
         * too; kd_secret_file_check refuses either before a read. A
         * regular file ignores the flag. */
        return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

/* The content of path, trailing newlines cut, into *outp. */
static kdelay_err_t file_read(const char *name, const char *path, char **outp,
                              char *errstr, size_t errstr_size)
{
        char q[600];
        kd_log_quote(path, q, sizeof(q));
        int fd = kd_secret_open(path);
        if (fd < 0)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: cannot open file:%s: %s", name, q,
                               strerror(errno));
        kdelay_err_t err =
            kd_secret_file_check(name, path, fd, errstr, errstr_size);
        char *buf = err ? NULL : malloc(KD_SECRET_FILE_MAX + 1);
        size_t len = 0;
        if (!err && !buf)
                err = KDELAY_ERR_NO_MEMORY;
        while (!err && len < KD_SECRET_FILE_MAX) {
                ssize_t r = read(fd, buf + len, KD_SECRET_FILE_MAX - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                      "%s: cannot read file:%s: %s", name, q,
                                      strerror(errno));
                if (r <= 0)
                        break;
                len += (size_t)r;
        }
        close(fd);
        if (!err) {
                buf[len] = '\0';
                while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
                        buf[--len] = '\0';
                if (!len || strlen(buf) != len)
                        err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                      "%s: file:%s is %s", name, q,
                                      len ? "binary (holds a NUL byte)"
                                          : "empty");
        }
        if (err) {
                if (buf) {
                        memset(buf, 0, KD_SECRET_FILE_MAX + 1);
                        free(buf);
                }
                return err;
        }
        *outp = buf;
        return KDELAY_OK;
}

kdelay_err_t kd_secret_resolve(const char *name, const char *value, char **outp,
                               char *errstr, size_t errstr_size)
{
        *outp = NULL;
        if (!strncmp(value, kd_file_ref, sizeof(kd_file_ref) - 1)) {
                const char *path = value + sizeof(kd_file_ref) - 1;
                if (!*path)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: file: needs a path", name);
                return file_read(name, path, outp, errstr, errstr_size);
        }
        if (!strncmp(value, kd_env_ref, sizeof(kd_env_ref) - 1)) {
                const char *var = value + sizeof(kd_env_ref) - 1;
                char q[300];
                if (!env_name_ok(var))
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: env:%s is not an environment "
                                       "variable name ([A-Za-z_][A-Za-z0-9_]*)",
                                       name, kd_log_quote(var, q, sizeof(q)));
                const char *v = getenv(var);
                if (!v)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: environment variable %s is not "
                                       "set",
                                       name, var);
                value = v;
        }
        if (!(*outp = strdup(value)))
                return KDELAY_ERR_NO_MEMORY;
        return KDELAY_OK;
}
