// Records what the reference's model-free scorers (@mastra/evals) return on a varied case set,
// into tests/fixtures/reference/model_free/*.json. Our own script: it only calls the reference.
//
//   MASTRA_REF=/path/to/node_modules node tools/reference/record_model_free.mjs [out_dir]
//
// JS Sets in step results are written as arrays (JSON.stringify would write `{}`).
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const modules = resolve(process.env.MASTRA_REF ?? '/work/ref/node_modules');
const outDir = resolve(process.argv[2] ?? 'tests/fixtures/reference/model_free');
const prebuilt = await import(join(modules, '@mastra/evals/dist/scorers/prebuilt/index.js'));
const require = createRequire(join(modules, 'noop.js'));
const evalsVersion = require('@mastra/evals/package.json').version;

const at = new Date(Date.UTC(2026, 0, 1));
let counter = 0;
const message = (role, text, extra = {}) => ({
  id: `m${++counter}`,
  role,
  content: { format: 2, parts: text === null ? [] : [{ type: 'text', text }], ...extra },
  createdAt: at,
});
const input = (...texts) => ({
  inputMessages: texts.map((t) => message('user', t)),
  rememberedMessages: [],
  systemMessages: [],
  taggedSystemMessages: {},
});
const output = (...texts) => texts.map((t) => message('assistant', t));

// Texts: plain, accents, unicode (astral, Greek, Cyrillic, CJK), punctuation, HTML, URLs,
// digits, contractions, negation, whitespace runs (tab, NBSP, newline), empty, long.
const long = Array.from({ length: 60 }, (_, i) =>
  `Sentence ${i} says the service is ${i % 3 ? 'good' : 'terrible'} and ${i % 2 ? 'fast' : 'slow'}.`,
).join(' ');
const TEXTS = [
  'The quick brown fox jumps over the lazy dog',
  'A quick brown fox jumped over a lazy dog!',
  'Explain how photosynthesis works in plants.',
  'Plants turn sunlight, water and carbon dioxide into sugar and oxygen.',
  'I love this product. It is amazing! Best purchase ever.',
  'I love this product. It broke after a day. Terrible support, I hate it.',
  'This is not good. I do not like it.',
  "I don't think she's been running to the café's garden.",
  'Café crème, naïve résumé, jalapeño piñata; Ærøskøbing — déjà vu.',
  'Crème brûlée at the café was délicieux 😍 but the service was awful 😡.',
  'Ελληνικά κείμενα: ΟΔΟΣ και οδός.',
  'Привет, мир! Это хороший день.',
  '你好，世界。今天天气很好！',
  'Visit https://example.com/path?q=1 or <b>bold</b> text, <i>right</i>?',
  'Call 555-1234 or 42 times; 3.14 is pi, 2025 was a year.',
  '  Multiple   spaces\tand\ttabs\nand\n\nnewlines\u00a0with\u00a0nbsp  ',
  '"Quoted" (parenthesised) words: yes! no? maybe... ‘single’ “double”',
  "It's the team's job; they're done, aren't they? 'quoted' words'",
  'constructor good, not bad, can\'t complain',
  'Great! Awesome!! Wonderful!!! Horrible. Disgusting?',
  'The children went to school; they were happy!',
  "John's iPhone costs $5.99 in New York City",
  'He has been working on machineLearning models all night',
  'HELLO World HeLLo world',
  'a',
  '',
  '   ',
  '...!!!???',
  '_ @ & # x',
  long,
];

function plain(value) {
  if (value === undefined) return null;
  return JSON.parse(
    JSON.stringify(value, (_key, v) => (v instanceof Set ? [...v] : v)),
  );
}

async function record(scorer, run) {
  try {
    const result = await scorer.run(run);
    return {
      score: result.score,
      preprocessStepResult: plain(result.preprocessStepResult),
      analyzeStepResult: plain(result.analyzeStepResult),
    };
  } catch (error) {
    return { error: String(error?.message ?? error) };
  }
}

function write(name, scorer, runs, cases) {
  mkdirSync(outDir, { recursive: true });
  const body = {
    reference: `@mastra/evals@${evalsVersion}`,
    recordedBy: 'tools/reference/record_model_free.mjs',
    scorer: { id: scorer.id, name: scorer.name },
    runs,
    cases,
  };
  writeFileSync(join(outDir, `${name}.json`), JSON.stringify(body) + '\n');
  console.log(`${name}: ${cases.length} cases`);
}

// Pairs: each text against its neighbours and a few far ones, plus multi-message runs.
function pairs() {
  const found = [];
  for (let i = 0; i < TEXTS.length; i++) {
    for (const j of [i, (i + 1) % TEXTS.length, (i + 7) % TEXTS.length]) {
      found.push({ input: input(TEXTS[i]), output: output(TEXTS[j]) });
    }
  }
  found.push({ input: input(TEXTS[0], TEXTS[2]), output: output(TEXTS[1], TEXTS[3]) });
  found.push({ input: input(TEXTS[4]), output: [message('assistant', null), ...output(TEXTS[5])] });
  found.push({ input: input(TEXTS[8]), output: output(TEXTS[8].toUpperCase()) });
  // White space as JavaScript sees it (U+001C and U+0085 are white space to Python only,
  // U+FEFF to JavaScript only), white-space-only changes, surrogate pairs.
  for (const [a, b] of [
    ['a b', 'a  b'],
    ['a\u00a0b c', 'a b  c'],
    ['\ufeffhello world', 'hello world'],
    ['hello\x1cworld', 'hello world'],
    ['hello\x85 world', 'hello world'],
    ['😀x good', '😁x good'],
    ['𝒜𝒷𝒸 café', '𝒜𝒷 cafe'],
  ]) {
    found.push({ input: input(a), output: output(b) });
  }
  // A ground truth on the run: the reference still compares input with output.
  found.push({ input: input(TEXTS[0]), output: output(TEXTS[1]), groundTruth: TEXTS[1] });
  found.push({ input: input(TEXTS[2]), output: output(TEXTS[3]), groundTruth: TEXTS[2] });
  return found;
}

// Each run is written once (`runs`); a case names its run by index.
async function recordAll(name, factory, optionSets, runs) {
  const template = factory(optionSets[0]);
  const cases = [];
  for (const options of optionSets) {
    const scorer = factory(options);
    for (let index = 0; index < runs.length; index++) {
      cases.push({ options: options ?? null, run: index, result: await record(scorer, runs[index]) });
    }
  }
  write(name, template, runs.map(plain), cases);
}

const runs = pairs();
await recordAll('textual_difference', () => prebuilt.createTextualDifferenceScorer(), [undefined], runs);
await recordAll(
  'content_similarity',
  (o) => prebuilt.createContentSimilarityScorer(o),
  [undefined, { ignoreCase: false, ignoreWhitespace: false }, { ignoreCase: true, ignoreWhitespace: false }, { ignoreCase: false, ignoreWhitespace: true }],
  runs,
);
await recordAll('keyword_coverage', () => prebuilt.createKeywordCoverageScorer(), [undefined], runs);

const toneRuns = TEXTS.map((t) => ({ input: input('How was it?'), output: output(t) }));
toneRuns.push({ input: input('q'), output: output(TEXTS[4], TEXTS[5]) });
toneRuns.push({ input: input('q'), output: [] });
await recordAll(
  'tone',
  (o) => prebuilt.createToneScorer(o),
  [undefined, { referenceTone: 'I am very happy and satisfied with the excellent result!' }, { referenceTone: 'This is awful, bad and sad.' }, { referenceTone: '' }, { referenceTone: TEXTS[9] }],
  toneRuns,
);

// Completeness: the pairs above plus question/answer pairs of everyday text (the set the
// approximation is measured on).
const QA = [
  ['What are the main causes of climate change?', 'Burning fossil fuels, deforestation and farming release greenhouse gases that warm the planet.'],
  ['How do I reset my password?', 'Click "Forgot password" on the login page and follow the emailed link to reset it.'],
  ['Describe the water cycle.', 'Water evaporates, condenses into clouds, falls as rain and flows back to the sea.'],
  ['Why did the Roman Empire fall?', 'Political instability, economic troubles and invasions weakened the empire until it fell.'],
  ['List the planets of the solar system.', 'Mercury, Venus, Earth, Mars, Jupiter, Saturn, Uranus and Neptune orbit the Sun.'],
  ['Who wrote Pride and Prejudice?', 'Jane Austen wrote it; the novel was published in 1813.'],
  ['How does a vaccine protect people?', 'A vaccine trains the immune system to recognise a germ, so the body fights it off faster.'],
  ['What is the capital of France and what is it known for?', 'Paris is the capital; it is famous for the Eiffel Tower, museums and food.'],
  ['Summarize the meeting about the budget cuts.', 'The team agreed to cut travel spending and delay two hires until next quarter.'],
  ['Can you explain recursion with an example?', 'Recursion is when a function calls itself, like computing a factorial from smaller factorials.'],
  ['The cats were sleeping while the dogs barked loudly.', 'Cats slept; dogs were barking.'],
  ['She has written three books and is writing a fourth.', 'She wrote three books and writes another one now.'],
  ['We went swimming, then we ate lunch and drove home.', 'They swam, had lunch and went home by car.'],
  ['The committee approved the new policy after long debates.', 'After debating for a long time, the committee approved the policy.'],
  ['Researchers discovered a new species of frog in Brazil.', 'A new frog species was found by scientists in Brazil.'],
  ['Please book a table for four people at seven tonight.', 'I booked a table for 4 at 7 pm.'],
  ['Compare Python and JavaScript for web development.', 'JavaScript runs in browsers; Python is popular on servers with frameworks like Django.'],
  ['Translate "good morning" into Spanish and French.', 'Buenos días in Spanish, bonjour in French.'],
  ['My order arrived damaged. What should I do?', 'Sorry about that! Reply with photos of the damage and we will send a replacement.'],
  ['Give me three tips for better sleep.', 'Keep a regular schedule, avoid screens before bed and keep the room dark and cool.'],
  ['The café served crème brûlée and espresso.', 'The cafe served creme brulee and an espresso.'],
  ['Explain how neural networks learn.', 'Networks adjust their weights with gradient descent to reduce the error on training data.'],
  ['Has the shipment been delivered yet?', 'Yes, the shipment was delivered yesterday afternoon.'],
  ['What did the children build at the beach?', 'The kids built a huge sandcastle near the water.'],
  ['Why is the sky blue?', 'Air molecules scatter short blue wavelengths of sunlight more than red ones.'],
  ['How many legs does a spider have?', 'Eight.'],
  ['Tell me about the history of the internet.', 'It began as ARPANET in 1969, grew with TCP/IP and became public with the web in the 1990s.'],
  ['I am running late, can we move the call?', 'Sure, we can move the call to 3pm.'],
  ['They had been waiting for hours before the doors opened.', 'People waited for hours until the doors were opened.'],
  ['Calculate the area of a circle with radius 3.', 'The area is pi times 3 squared, about 28.27.'],
];
const completenessRuns = [
  ...runs,
  ...QA.map(([q, a]) => ({ input: input(q), output: output(a) })),
  { input: input(''), output: output('') },
  { input: input(''), output: output('Something') },
];
await recordAll('completeness', () => prebuilt.createCompletenessScorer(), [undefined], completenessRuns);

// Tool calls: legacy `toolInvocations`, `tool-invocation` parts, both merged, every state.
const invocation = (toolName, state, toolCallId) => ({ toolName, toolCallId, state, args: {}, ...(state === 'result' ? { result: 'ok' } : {}) });
const toolMessage = (legacy, parts = []) => ({
  id: `m${++counter}`,
  role: 'assistant',
  content: {
    format: 2,
    parts: [...parts.map((p) => ({ type: 'tool-invocation', toolInvocation: p })), { type: 'text', text: 'done' }],
    ...(legacy ? { toolInvocations: legacy } : {}),
  },
  createdAt: at,
});
const toolOutputs = [
  [toolMessage([invocation('weather', 'result', 'a')])],
  [toolMessage(null, [invocation('weather', 'output-error', 'a')])],
  [toolMessage(null, [invocation('search', 'call', 'a'), invocation('weather', 'partial-call', 'b')])],
  [toolMessage([invocation('search', 'result', 'a'), invocation('weather', 'result', 'b')])],
  [toolMessage([invocation('weather', 'result', 'b'), invocation('search', 'result', 'a')])],
  [toolMessage([invocation('search', 'result', 'a')], [invocation('search', 'result', 'a'), invocation('weather', 'output-error', 'b')])],
  [toolMessage([invocation('lookup', 'result', 'x'), invocation('search', 'result', 'a')], [invocation('search', 'result', 'a')])],
  [toolMessage([invocation('search', 'result')]), toolMessage(null, [invocation('weather', 'result')])],
  [toolMessage([invocation('weather', 'result', 'a'), invocation('weather', 'result', 'b')])],
  output('no tools at all'),
  [],
];
const toolRuns = toolOutputs.map((o) => ({ input: input('What is the weather?'), output: o }));
toolRuns.push({ input: { inputMessages: [], rememberedMessages: [], systemMessages: [], taggedSystemMessages: {} }, output: toolOutputs[0] });
await recordAll(
  'tool_call_accuracy_code',
  (o) => prebuilt.createToolCallAccuracyScorerCode(o),
  [
    { expectedTool: 'weather' },
    { expectedTool: 'weather', strictMode: true },
    { expectedToolOrder: ['search', 'weather'] },
    { expectedToolOrder: ['search', 'weather'], strictMode: true },
    { expectedTool: 'weather', expectedToolOrder: ['weather', 'search'] },
  ],
  toolRuns,
);

// The tone lexicon, as a digest: AFINN-165 labels with the emoji labels merged in, the way
// the `sentiment` package builds it. Our copy must hash the same.
const labels = { ...require('sentiment/languages/en/labels.json'), ...require('sentiment/build/emoji.json') };
const negators = Object.keys(require('sentiment/languages/en/negators.json')).sort();
const canonical = JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
writeFileSync(
  join(outDir, 'tone_lexicon.json'),
  JSON.stringify({
    reference: `sentiment@${require('sentiment/package.json').version}`,
    entries: Object.keys(labels).length,
    sha256OfSortedPairs: createHash('sha256').update(canonical).digest('hex'),
    negators,
  }, null, 1) + '\n',
);
