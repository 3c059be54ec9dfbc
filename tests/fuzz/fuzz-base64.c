/* fuzz-base64.c: libFuzzer target for base64 (src/base64.c): strict decoding is canonical, and encoding round-trips. */
#include "base64.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t enclen = base64_encoded_len(size), declen = 0;
	char *enc = malloc(enclen + 1);
	unsigned char *dec = malloc(base64_decoded_max(size) + 1);
	unsigned char *back;

	if (!enc || !dec)
		abort();

	/* The input as text: decoding accepts only the one canonical form,
	 * so what it accepts encodes back to exactly the input. */
	if (base64_decode((const char *)data, size, dec, &declen) == 0) {
		char *again;

		CHECK(declen <= base64_decoded_max(size));
		CHECK(base64_encoded_len(declen) == size);
		again = malloc(size + 1);
		if (!again)
			abort();
		base64_encode(dec, declen, again);
		CHECK(memcmp(again, data, size) == 0 && again[size] == '\0');
		free(again);
	}

	/* The input as bytes: encode, then decode gives them back. */
	base64_encode(data, size, enc);
	CHECK(strlen(enc) == enclen);
	back = malloc(base64_decoded_max(enclen) + 1);
	if (!back)
		abort();
	CHECK(base64_decode(enc, enclen, back, &declen) == 0);
	CHECK(declen == size && memcmp(back, data, size) == 0);

	free(back);
	free(enc);
	free(dec);
	return 0;
}
