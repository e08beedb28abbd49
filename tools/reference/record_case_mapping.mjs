// Records the reference runtime's lower-case mapping (String.prototype.toLowerCase, the function
// the model-free scorers lower-case text with): every code point it changes, with its lower
// case, and the Unicode version of the runtime's tables.
// Usage: node tools/reference/record_case_mapping.mjs > tests/fixtures/reference/model_free/case_mapping.json
const changed = [];
for (let code = 0; code < 0x110000; code++) {
  if (code >= 0xd800 && code <= 0xdfff) continue;
  const char = String.fromCodePoint(code);
  const lower = char.toLowerCase();
  if (lower !== char) changed.push([code, lower]);
}
console.log(JSON.stringify({ unicode: process.versions.unicode, node: process.version, changed }));
