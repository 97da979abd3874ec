#include "common/utf8.h"

size_t fl_utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80) {
		if (cp)
			*cp = c;
		return 1;
	}
	if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; c &= 0x1F; }
	else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; c &= 0x0F; }
	else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; c &= 0x07; }
	else return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	if (cp)
		*cp = c;
	return len;
}
