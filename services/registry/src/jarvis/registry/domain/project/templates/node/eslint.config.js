// ESLint flat config: https://eslint.org/docs/latest/use/configure/configuration-files
// It imports nothing, so `npx eslint .` works without extra packages; add typescript-eslint
// or framework plugins here when the project needs them.
export default [
  {
    ignores: ["dist/", "build/", "coverage/", "node_modules/", ".next/", ".nuxt/"],
  },
  {
    files: ["**/*.{js,mjs,cjs,jsx}"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      parserOptions: { ecmaFeatures: { jsx: true } },
    },
    linterOptions: { reportUnusedDisableDirectives: true },
    rules: {
      "no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      "no-unreachable": "error",
      "no-dupe-keys": "error",
      "no-duplicate-case": "error",
      "no-self-compare": "error",
      "no-unsafe-finally": "error",
      "no-constant-condition": "error",
      "no-var": "error",
      "prefer-const": "error",
      eqeqeq: ["error", "smart"],
    },
  },
];
