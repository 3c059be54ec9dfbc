/* test-control-parse.c: TAP tests of the .keyfs/ control-command parser. */
#include <errno.h>
#include <stdlib.h>

#include "control-parse.h"
#include "tap.h"

#define MP "/mnt/k"

static int parse_n(enum ctl_cmd cmd, const char *buf, size_t len,
		   struct ctl_command *c)
{
	return ctl_parse(cmd, buf, len, MP, c);
}

static int parse(enum ctl_cmd cmd, const char *s, struct ctl_command *c)
{
	return parse_n(cmd, s, strlen(s), c);
}

static bool zeroed(const struct ctl_command *c)
{
	static const struct ctl_command zero;

	return memcmp(c, &zero, sizeof(zero)) == 0;
}

/* A rejected write: -EINVAL and nothing left behind in c. */
static void rejects_n(enum ctl_cmd cmd, const char *buf, size_t len,
		      const char *what)
{
	struct ctl_command c;
	int ret;

	memset(&c, 0xa5, sizeof(c));
	ret = parse_n(cmd, buf, len, &c);
	is_int(ret, -EINVAL, "rejects %s", what);
	ok(zeroed(&c), "rejected %s leaves the command zeroed", what);
	ctl_command_free(&c);
}

/* s with newlines and tabs shown as \n and \t, so TAP lines stay whole. */
static void rejects(enum ctl_cmd cmd, const char *s)
{
	char what[128];
	size_t o = 0;

	for (const char *p = s; *p && o + 3 < sizeof(what); p++) {
		if (*p == '\n' || *p == '\t') {
			what[o++] = '\\';
			what[o++] = *p == '\n' ? 'n' : 't';
		} else {
			what[o++] = *p;
		}
	}
	what[o] = '\0';
	rejects_n(cmd, s, strlen(s), what);
}

/* The KEY of a one-field command is the path want. */
static void key_path(const char *s, const char *want)
{
	struct ctl_command c;

	is_int(parse(CTL_REVOKE, s, &c), 0, "revoke '%s' parses", s);
	is_int(c.key.kind, CTL_REF_PATH, "'%s' is a path", s);
	is_str(c.key.path, want, "'%s' is path '%s'", s, want);
	ctl_command_free(&c);
}

static void key_special(const char *s, int want)
{
	struct ctl_command c;

	is_int(parse(CTL_REVOKE, s, &c), 0, "revoke %s parses", s);
	is_int(c.key.kind, CTL_REF_SPECIAL, "%s is special", s);
	is_int(c.key.special, want, "%s is %d", s, want);
	ctl_command_free(&c);
}

static void key_serial(const char *s, kserial_t want)
{
	struct ctl_command c;

	is_int(parse(CTL_REVOKE, s, &c), 0, "revoke %s parses", s);
	is_int(c.key.kind, CTL_REF_SERIAL, "%s is a serial", s);
	is_int(c.key.serial, want, "%s is serial %d", s, want);
	ctl_command_free(&c);
}

static void test_names(void)
{
	static const struct {
		const char *name;
		enum ctl_cmd cmd;
	} t[] = {
		{ "revoke", CTL_REVOKE }, { "invalidate", CTL_INVALIDATE },
		{ "link", CTL_LINK }, { "unlink", CTL_UNLINK },
		{ "setperm", CTL_SETPERM }, { "chown", CTL_CHOWN },
		{ "timeout", CTL_TIMEOUT }, { "clear", CTL_CLEAR },
		{ "request", CTL_REQUEST }, { "restrict", CTL_RESTRICT },
	};
	enum ctl_cmd cmd;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cmd = (enum ctl_cmd)-1;
		is_int(ctl_cmd_from_name(t[i].name, &cmd), 0, "%s is a command",
		       t[i].name);
		is_int(cmd, t[i].cmd, "%s is the right command", t[i].name);
	}
	is_int(ctl_cmd_from_name("keys", &cmd), -ENOENT, "keys is no command");
	is_int(ctl_cmd_from_name("", &cmd), -ENOENT, "'' is no command");
	is_int(ctl_cmd_from_name("Revoke", &cmd), -ENOENT,
	       "names are case-sensitive");
	is_int(ctl_cmd_from_name("revoke ", &cmd), -ENOENT,
	       "no trailing space in names");
}

static void test_refs(void)
{
	/* Relative paths, normalised but kept escaped. */
	key_path("session/foo", "session/foo");
	key_path("session//foo", "session/foo");
	key_path("./session/./foo", "session/foo");
	key_path("session/foo/", "session/foo");
	key_path("session///foo//", "session/foo");
	key_path("session/a%20b", "session/a%20b");
	key_path("session/%25logon:x", "session/%25logon:x");
	key_path("session/...", "session/...");
	key_path("./#1", "#1");
	key_path("./@s", "@s");
	key_path("%logon:cifs:alice", "%logon:cifs:alice");

	/* Absolute paths inside the mount. */
	key_path("/mnt/k/session/foo", "session/foo");
	key_path("/mnt/k//session/foo", "session/foo");
	key_path("//mnt/./k/session/foo/", "session/foo");
	key_path("/mnt/k/@s", "@s");

	/* The root: only a KEYRING may be it. */
	rejects(CTL_REVOKE, "/mnt/k");
	rejects(CTL_REVOKE, "/mnt/k/");
	rejects(CTL_REVOKE, ".");
	rejects(CTL_REVOKE, "./");
	rejects(CTL_REVOKE, "/");

	/* Outside the mount, or escaping it. */
	rejects(CTL_REVOKE, "/mnt/kx/foo");
	rejects(CTL_REVOKE, "/mnt/kx");
	rejects(CTL_REVOKE, "/mnt");
	rejects(CTL_REVOKE, "/etc/passwd");
	rejects(CTL_REVOKE, "/mnt/k/../k/session/foo");
	rejects(CTL_REVOKE, "../foo");
	rejects(CTL_REVOKE, "session/../user/foo");
	rejects(CTL_REVOKE, "session/..");
	rejects(CTL_REVOKE, "..");

	/* Serials. */
	key_serial("#1", 1);
	key_serial("#123456", 123456);
	key_serial("#2147483647", 2147483647);
	key_serial("#007", 7);
	rejects(CTL_REVOKE, "#0");
	rejects(CTL_REVOKE, "#-1");
	rejects(CTL_REVOKE, "#+1");
	rejects(CTL_REVOKE, "#abc");
	rejects(CTL_REVOKE, "#12a");
	rejects(CTL_REVOKE, "#");
	rejects(CTL_REVOKE, "#2147483648");
	rejects(CTL_REVOKE, "#99999999999");
	rejects(CTL_REVOKE, "#0x10");

	/* Special keyrings. */
	key_special("@s", KEYFS_SPEC_SESSION);
	key_special("@u", KEYFS_SPEC_USER);
	key_special("@us", KEYFS_SPEC_USER_SESSION);
	key_special("@p", KEYFS_SPEC_PROCESS);
	rejects(CTL_REVOKE, "@x");
	rejects(CTL_REVOKE, "@");
	rejects(CTL_REVOKE, "@S");
	rejects(CTL_REVOKE, "@s/foo");
	rejects(CTL_REVOKE, "@ss");
	rejects(CTL_REVOKE, "@t");
}

static void test_mountpoints(void)
{
	struct ctl_command c;

	is_int(ctl_parse(CTL_REVOKE, "/mnt/k/a", 8, "/mnt/k/", &c), 0,
	       "a mountpoint with a trailing '/' parses");
	is_str(c.key.path, "a", "... and strips it");
	ctl_command_free(&c);
	is_int(ctl_parse(CTL_REVOKE, "/a/b", 4, "/", &c), 0,
	       "mounted on /: every absolute path is inside");
	is_str(c.key.path, "a/b", "... relative to /");
	ctl_command_free(&c);
	memset(&c, 0xa5, sizeof(c));
	is_int(ctl_parse(CTL_REVOKE, "/mnt/k/a", 8, NULL, &c), -EINVAL,
	       "no mountpoint: absolute paths are refused");
	ok(zeroed(&c), "... and the command is zeroed");
	is_int(ctl_parse(CTL_REVOKE, "a", 1, NULL, &c), 0,
	       "no mountpoint: relative paths still parse");
	is_str(c.key.path, "a", "... as they are");
	ctl_command_free(&c);
}

static void test_commands(void)
{
	struct ctl_command c;

	is_int(parse(CTL_REVOKE, "session/foo", &c), 0, "revoke KEY");
	is_int(c.cmd, CTL_REVOKE, "... is revoke");
	is_int(c.keyring.kind, CTL_REF_PATH, "... no keyring");
	ok(c.keyring.path == NULL, "... no keyring path");
	ctl_command_free(&c);

	is_int(parse(CTL_INVALIDATE, "#42", &c), 0, "invalidate KEY");
	is_int(c.cmd, CTL_INVALIDATE, "... is invalidate");
	is_int(c.key.serial, 42, "... of #42");
	ctl_command_free(&c);

	is_int(parse(CTL_LINK, "session/foo user", &c), 0, "link KEY KEYRING");
	is_int(c.cmd, CTL_LINK, "... is link");
	is_str(c.key.path, "session/foo", "... key");
	is_int(c.keyring.kind, CTL_REF_PATH, "... keyring is a path");
	is_str(c.keyring.path, "user", "... keyring");
	ctl_command_free(&c);

	is_int(parse(CTL_LINK, "#5 /mnt/k", &c), 0, "link KEY ROOT");
	is_str(c.keyring.path, "", "... keyring is the mount root");
	ctl_command_free(&c);
	is_int(parse(CTL_LINK, "#5 .", &c), 0, "link KEY .");
	is_str(c.keyring.path, "", "... keyring is the mount root");
	ctl_command_free(&c);
	rejects(CTL_LINK, "/mnt/k @s");
	rejects(CTL_LINK, "#5");
	rejects(CTL_LINK, "#5 @s @u");

	is_int(parse(CTL_UNLINK, "/mnt/k/user/x @u", &c), 0,
	       "unlink KEY KEYRING");
	is_int(c.cmd, CTL_UNLINK, "... is unlink");
	is_str(c.key.path, "user/x", "... key");
	is_int(c.keyring.kind, CTL_REF_SPECIAL, "... keyring special");
	is_int(c.keyring.special, KEYFS_SPEC_USER, "... @u");
	ctl_command_free(&c);
	rejects(CTL_UNLINK, "user/x");
	rejects(CTL_UNLINK, "user/x @u @s");
	rejects(CTL_UNLINK, "user/x /mnt/kx");

	is_int(parse(CTL_CLEAR, "@s", &c), 0, "clear KEYRING");
	is_int(c.cmd, CTL_CLEAR, "... is clear");
	is_int(c.key.kind, CTL_REF_SPECIAL, "... keyring in key");
	is_int(c.key.special, KEYFS_SPEC_SESSION, "... @s");
	ctl_command_free(&c);
	is_int(parse(CTL_CLEAR, "/mnt/k", &c), 0, "clear ROOT");
	is_str(c.key.path, "", "... the mount root");
	ctl_command_free(&c);
	rejects(CTL_CLEAR, "@s @u");
	rejects(CTL_CLEAR, "/mnt/kx");

	is_int(parse(CTL_TIMEOUT, "session/foo 3600", &c), 0,
	       "timeout KEY SECONDS");
	is_int(c.cmd, CTL_TIMEOUT, "... is timeout");
	is_int(c.timeout, 3600, "... 3600");
	ctl_command_free(&c);
	is_int(parse(CTL_TIMEOUT, "#1 0", &c), 0, "timeout KEY 0");
	is_int(c.timeout, 0, "... clears");
	ctl_command_free(&c);
	is_int(parse(CTL_TIMEOUT, "#1 4294967295", &c), 0, "timeout UINT_MAX");
	is_int(c.timeout, 4294967295u, "... fits unsigned");
	ctl_command_free(&c);
	rejects(CTL_TIMEOUT, "#1 4294967296");
	rejects(CTL_TIMEOUT, "#1 -1");
	rejects(CTL_TIMEOUT, "#1 +5");
	rejects(CTL_TIMEOUT, "#1 0x10");
	rejects(CTL_TIMEOUT, "#1 10s");
	rejects(CTL_TIMEOUT, "#1");
	rejects(CTL_TIMEOUT, "#1 1 2");
	rejects(CTL_TIMEOUT, "/mnt/k 5");
}

static void perm_is(const char *s, uint32_t want)
{
	struct ctl_command c;
	char line[64];

	snprintf(line, sizeof(line), "#1 %s", s);
	is_int(parse(CTL_SETPERM, line, &c), 0, "setperm %s", s);
	is_int(c.cmd, CTL_SETPERM, "... is setperm");
	is_int(c.perm, want, "... %s is %#x", s, want);
	ctl_command_free(&c);
}

static void test_setperm(void)
{
	struct ctl_command c;

	perm_is("0x3f010000", 0x3f010000);
	perm_is("0X3F010000", 0x3f010000);
	perm_is("0xffffffff", 0xffffffff);
	perm_is("1056964608", 0x3f000000);
	perm_is("0", 0);
	perm_is("0777", 0777);
	perm_is("4294967295", 0xffffffff);
	rejects(CTL_SETPERM, "#1 0x100000000");
	rejects(CTL_SETPERM, "#1 4294967296");
	rejects(CTL_SETPERM, "#1 0x");
	rejects(CTL_SETPERM, "#1 0x3fz");
	rejects(CTL_SETPERM, "#1 08");
	rejects(CTL_SETPERM, "#1 -1");
	rejects(CTL_SETPERM, "#1 +1");
	rejects(CTL_SETPERM, "#1 abc");
	rejects(CTL_SETPERM, "#1 99999999999999999999999");
	rejects(CTL_SETPERM, "#1");
	rejects(CTL_SETPERM, "#1 0x3f 1");

	is_int(parse(CTL_SETPERM, "/mnt/k/session/x 0x3f3f0000", &c), 0,
	       "setperm on an absolute path");
	is_str(c.key.path, "session/x", "... key");
	ctl_command_free(&c);
}

static void test_chown(void)
{
	struct ctl_command c;

	is_int(parse(CTL_CHOWN, "#1 1000", &c), 0, "chown KEY UID");
	is_int(c.cmd, CTL_CHOWN, "... is chown");
	is_int(c.uid, 1000, "... uid");
	ok(c.gid == (gid_t)-1, "... gid not given is -1");
	ctl_command_free(&c);

	is_int(parse(CTL_CHOWN, "session/x 1000:100", &c), 0,
	       "chown KEY UID:GID");
	is_int(c.uid, 1000, "... uid");
	is_int(c.gid, 100, "... gid");
	ctl_command_free(&c);

	is_int(parse(CTL_CHOWN, "#1 0:0", &c), 0, "chown KEY 0:0");
	is_int(c.uid, 0, "... uid 0");
	is_int(c.gid, 0, "... gid 0");
	ctl_command_free(&c);

	is_int(parse(CTL_CHOWN, "#1 4294967294:4294967294", &c), 0,
	       "chown to the largest ids");
	ok(c.uid == (uid_t)-2 && c.gid == (gid_t)-2, "... both -2");
	ctl_command_free(&c);

	rejects(CTL_CHOWN, "#1 4294967295");
	rejects(CTL_CHOWN, "#1 1000:4294967295");
	rejects(CTL_CHOWN, "#1 4294967296");
	rejects(CTL_CHOWN, "#1 -1");
	rejects(CTL_CHOWN, "#1 1000:-1");
	rejects(CTL_CHOWN, "#1 1000:");
	rejects(CTL_CHOWN, "#1 :100");
	rejects(CTL_CHOWN, "#1 :");
	rejects(CTL_CHOWN, "#1 1000:100:5");
	rejects(CTL_CHOWN, "#1 root");
	rejects(CTL_CHOWN, "#1 0x10");
	rejects(CTL_CHOWN, "#1 123456789012345678901234567890");
	rejects(CTL_CHOWN, "#1");
	rejects(CTL_CHOWN, "#1 1000 100");
}

static void test_request(void)
{
	struct ctl_command c;

	is_int(parse(CTL_REQUEST, "user foo", &c), 0, "request TYPE DESC");
	is_int(c.cmd, CTL_REQUEST, "... is request");
	is_str(c.type, "user", "... type");
	is_str(c.desc, "foo", "... desc");
	ok(c.callout == NULL, "... no callout");
	is_int(c.keyring.kind, CTL_REF_SPECIAL, "... keyring defaults to special");
	is_int(c.keyring.special, KEYFS_SPEC_SESSION, "... @s");
	ok(c.key.path == NULL, "... no key");
	ctl_command_free(&c);

	is_int(parse(CTL_REQUEST, "user foo -", &c), 0,
	       "request TYPE DESC -");
	ok(c.callout == NULL, "... '-' is no callout");
	is_int(c.keyring.special, KEYFS_SPEC_SESSION, "... @s");
	ctl_command_free(&c);

	is_int(parse(CTL_REQUEST, "user foo %2D", &c), 0,
	       "request TYPE DESC %%2D");
	is_str(c.callout, "-", "... an escaped '-' is a callout '-'");
	ctl_command_free(&c);

	is_int(parse(CTL_REQUEST, "user foo some%20info", &c), 0,
	       "request TYPE DESC CALLOUT");
	is_str(c.callout, "some info", "... callout unescaped");
	is_int(c.keyring.special, KEYFS_SPEC_SESSION, "... @s");
	ctl_command_free(&c);

	is_int(parse(CTL_REQUEST, "user foo - @u", &c), 0,
	       "request TYPE DESC - KEYRING");
	ok(c.callout == NULL, "... no callout");
	is_int(c.keyring.kind, CTL_REF_SPECIAL, "... keyring special");
	is_int(c.keyring.special, KEYFS_SPEC_USER, "... @u");
	ctl_command_free(&c);

	is_int(parse(CTL_REQUEST, "logon cifs:alice info /mnt/k/user", &c), 0,
	       "request TYPE DESC CALLOUT PATH");
	is_str(c.type, "logon", "... type");
	is_str(c.desc, "cifs:alice", "... desc");
	is_str(c.callout, "info", "... callout");
	is_int(c.keyring.kind, CTL_REF_PATH, "... keyring path");
	is_str(c.keyring.path, "user", "... user");
	ctl_command_free(&c);

	is_int(parse(CTL_REQUEST, "user foo - #7", &c), 0,
	       "request ... #SERIAL");
	is_int(c.keyring.kind, CTL_REF_SERIAL, "... keyring serial");
	is_int(c.keyring.serial, 7, "... 7");
	ctl_command_free(&c);

	/* Escapes in text fields. */
	is_int(parse(CTL_REQUEST, "user my%20key", &c), 0, "desc with %%20");
	is_str(c.desc, "my key", "... is a space");
	ctl_command_free(&c);
	is_int(parse(CTL_REQUEST, "user 100%25", &c), 0, "desc with %%25");
	is_str(c.desc, "100%", "... is a percent");
	ctl_command_free(&c);
	is_int(parse(CTL_REQUEST, "user a%2Fb", &c), 0, "desc with %%2F");
	is_str(c.desc, "a/b", "... is a slash");
	ctl_command_free(&c);
	is_int(parse(CTL_REQUEST, "user a%0Ab", &c), 0, "desc with %%0A");
	is_str(c.desc, "a\nb", "... is a newline");
	ctl_command_free(&c);
	is_int(parse(CTL_REQUEST, "us%65r x", &c), 0, "type with an escape");
	is_str(c.type, "user", "... unescaped");
	ctl_command_free(&c);
	rejects(CTL_REQUEST, "user a%zzb");
	rejects(CTL_REQUEST, "user a%00b");
	rejects(CTL_REQUEST, "user a%2");
	rejects(CTL_REQUEST, "user a%");
	rejects(CTL_REQUEST, "user foo a%zz");
	rejects(CTL_REQUEST, "us%zzr foo");

	rejects(CTL_REQUEST, "user");
	rejects(CTL_REQUEST, "user foo - @s extra");
	rejects(CTL_REQUEST, "user foo - @x");
	rejects(CTL_REQUEST, "user foo - /etc");
	rejects(CTL_REQUEST, "user foo - ../x");
}

static void test_request_limits(void)
{
	struct ctl_command c;
	char type[KEYFS_TYPE_MAX + 2], line[KEYFS_DESC_MAX + 64];

	memset(type, 't', KEYFS_TYPE_MAX);
	type[KEYFS_TYPE_MAX] = '\0';
	snprintf(line, sizeof(line), "%s foo", type);
	is_int(parse(CTL_REQUEST, line, &c), 0, "a %d-byte type",
	       KEYFS_TYPE_MAX);
	is_int(strlen(c.type), KEYFS_TYPE_MAX, "... kept whole");
	ctl_command_free(&c);
	memset(type, 't', KEYFS_TYPE_MAX + 1);
	type[KEYFS_TYPE_MAX + 1] = '\0';
	snprintf(line, sizeof(line), "%s foo", type);
	rejects_n(CTL_REQUEST, line, strlen(line), "a 32-byte type");
	/* Escapes count once unescaped: 31 bytes written as 33. */
	memset(type, 't', KEYFS_TYPE_MAX);
	type[KEYFS_TYPE_MAX] = '\0';
	snprintf(line, sizeof(line), "%%74%s foo", type + 1);
	is_int(parse(CTL_REQUEST, line, &c), 0, "31 bytes with an escape");
	is_int(strlen(c.type), KEYFS_TYPE_MAX, "... 31 unescaped");
	ctl_command_free(&c);

	memcpy(line, "user ", 5);
	memset(line + 5, 'd', KEYFS_DESC_MAX);
	line[5 + KEYFS_DESC_MAX] = '\0';
	is_int(parse(CTL_REQUEST, line, &c), 0, "a %d-byte description",
	       KEYFS_DESC_MAX);
	is_int(strlen(c.desc), KEYFS_DESC_MAX, "... kept whole");
	ctl_command_free(&c);
	line[5 + KEYFS_DESC_MAX] = 'd';
	line[6 + KEYFS_DESC_MAX] = '\0';
	rejects_n(CTL_REQUEST, line, strlen(line), "a 4096-byte description");
	/* 4095 bytes unescaped, 4099 written. */
	memset(line + 5, 'd', KEYFS_DESC_MAX + 4);
	memcpy(line + 5, "%20%20", 6);
	line[5 + KEYFS_DESC_MAX + 4] = '\0';
	is_int(parse(CTL_REQUEST, line, &c), 0,
	       "a description of 4095 bytes unescaped");
	is_int(strlen(c.desc), KEYFS_DESC_MAX, "... kept whole");
	ok(memcmp(c.desc, "  dd", 4) == 0, "... escapes undone");
	ctl_command_free(&c);
}

static void test_restrict(void)
{
	struct ctl_command c;

	is_int(parse(CTL_RESTRICT, "@s", &c), 0, "restrict KEYRING");
	is_int(c.cmd, CTL_RESTRICT, "... is restrict");
	is_int(c.key.kind, CTL_REF_SPECIAL, "... keyring in key");
	is_int(c.key.special, KEYFS_SPEC_SESSION, "... @s");
	ok(c.type == NULL, "... no type");
	ok(c.restriction == NULL, "... no restriction");
	ctl_command_free(&c);

	is_int(parse(CTL_RESTRICT, "session/ring asymmetric", &c), 0,
	       "restrict KEYRING TYPE");
	is_str(c.key.path, "session/ring", "... keyring");
	is_str(c.type, "asymmetric", "... type");
	ok(c.restriction == NULL, "... no restriction");
	ctl_command_free(&c);

	is_int(parse(CTL_RESTRICT,
		     "/mnt/k/session/ring asymmetric key_or_keyring:1234:chain",
		     &c), 0, "restrict KEYRING TYPE RESTRICTION");
	is_str(c.key.path, "session/ring", "... keyring");
	is_str(c.type, "asymmetric", "... type");
	is_str(c.restriction, "key_or_keyring:1234:chain", "... restriction");
	ctl_command_free(&c);

	is_int(parse(CTL_RESTRICT, ". user a%20b", &c), 0,
	       "restrict the root, escaped restriction");
	is_str(c.key.path, "", "... the root");
	is_str(c.restriction, "a b", "... unescaped");
	ctl_command_free(&c);

	rejects(CTL_RESTRICT, "@s user a b");
	rejects(CTL_RESTRICT, "@s user a%zz");
	rejects(CTL_RESTRICT, "@s 0123456789012345678901234567890123456789");
	rejects(CTL_RESTRICT, "/etc user");
}

static void test_syntax(void)
{
	struct ctl_command c;
	char *big;

	/* Newlines. */
	is_int(parse(CTL_REVOKE, "#1\n", &c), 0, "a trailing newline");
	is_int(c.key.serial, 1, "... is not part of the field");
	ctl_command_free(&c);
	is_int(parse(CTL_LINK, "session/a user\n", &c), 0,
	       "a trailing newline after two fields");
	is_str(c.keyring.path, "user", "... is not part of the field");
	ctl_command_free(&c);
	rejects(CTL_REVOKE, "#1\n\n");
	rejects(CTL_REVOKE, "#1\n#2");
	rejects(CTL_REVOKE, "#1\n#2\n");
	rejects(CTL_LINK, "#1\n@s");
	rejects(CTL_REVOKE, "\n#1");

	/* Spaces. */
	is_int(parse(CTL_LINK, "  #1   @s  \n", &c), 0,
	       "leading, repeated and trailing spaces");
	is_int(c.key.serial, 1, "... key");
	is_int(c.keyring.special, KEYFS_SPEC_SESSION, "... keyring");
	ctl_command_free(&c);
	rejects(CTL_LINK, "#1\t@s");
	rejects(CTL_REVOKE, "#1\t");

	/* Empty input. */
	rejects_n(CTL_REVOKE, "", 0, "an empty write");
	rejects(CTL_REVOKE, "\n");
	rejects(CTL_REVOKE, "   ");
	rejects(CTL_REVOKE, "   \n");
	rejects(CTL_CLEAR, "");
	rejects(CTL_REQUEST, "");
	rejects(CTL_RESTRICT, "\n");

	/* NUL bytes. */
	rejects_n(CTL_REVOKE, "#1\0", 3, "a trailing NUL");
	rejects_n(CTL_REVOKE, "#1\0\n", 4, "a NUL before the newline");
	rejects_n(CTL_REVOKE, "#1\n\0", 4, "a NUL after the newline");
	rejects_n(CTL_LINK, "#1\0 @s", 6, "a NUL inside");
	rejects_n(CTL_REVOKE, "\0", 1, "a lone NUL");
	rejects_n(CTL_REQUEST, "user a\0b", 8, "a NUL in a description");

	/* Length: CTL_LINE_MAX bytes, the newline included. */
	big = malloc(CTL_LINE_MAX + 2);
	if (!big)
		return;
	memset(big, 'x', CTL_LINE_MAX + 1);
	memcpy(big, "session/", 8);
	big[CTL_LINE_MAX - 1] = '\n';
	is_int(parse_n(CTL_REVOKE, big, CTL_LINE_MAX, &c), 0,
	       "a line of CTL_LINE_MAX with its newline");
	is_int(strlen(c.key.path), CTL_LINE_MAX - 1, "... kept whole");
	ctl_command_free(&c);
	is_int(parse_n(CTL_REVOKE, big, CTL_LINE_MAX - 1, &c), 0,
	       "a line of CTL_LINE_MAX - 1 without newline");
	ctl_command_free(&c);
	big[CTL_LINE_MAX - 1] = 'x';
	is_int(parse_n(CTL_REVOKE, big, CTL_LINE_MAX, &c), 0,
	       "a line of CTL_LINE_MAX without newline");
	ctl_command_free(&c);
	big[CTL_LINE_MAX] = '\n';
	rejects_n(CTL_REVOKE, big, CTL_LINE_MAX + 1,
		  "a line over CTL_LINE_MAX, newline included");
	big[CTL_LINE_MAX] = 'x';
	rejects_n(CTL_REVOKE, big, CTL_LINE_MAX + 1,
		  "a line over CTL_LINE_MAX without newline");
	free(big);

	/* An unknown command. */
	memset(&c, 0xa5, sizeof(c));
	is_int(ctl_parse((enum ctl_cmd)99, "#1", 2, MP, &c), -EINVAL,
	       "an unknown command");
	ok(zeroed(&c), "... leaves the command zeroed");

	/* Free is safe on a zeroed struct, twice. */
	memset(&c, 0, sizeof(c));
	ctl_command_free(&c);
	ctl_command_free(&c);
	ok(zeroed(&c), "free of a zeroed command");
}

/* A failure after fields were allocated leaves nothing behind (the
 * sanitizer checks for leaks; here the struct is checked). */
static void test_partial(void)
{
	rejects(CTL_LINK, "session/a /etc");
	rejects(CTL_UNLINK, "session/a @x");
	rejects(CTL_SETPERM, "session/a 0xzz");
	rejects(CTL_CHOWN, "session/a x");
	rejects(CTL_TIMEOUT, "session/a x");
	rejects(CTL_REQUEST, "user foo bar @x");
	rejects(CTL_REQUEST, "user foo%zz");
	rejects(CTL_RESTRICT, "session/r user %zz");
	rejects(CTL_RESTRICT, "session/r %zz");
}

int main(void)
{
	test_names();
	test_refs();
	test_mountpoints();
	test_commands();
	test_setperm();
	test_chown();
	test_request();
	test_request_limits();
	test_restrict();
	test_syntax();
	test_partial();
	return done_testing();
}
