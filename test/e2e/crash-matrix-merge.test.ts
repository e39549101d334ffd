// The crash matrix in merge mode (test/support/crash-matrix.ts): every fault point, then random SIGKILLs.
import { crashMatrix } from '../support/crash-matrix.js';

await crashMatrix('merge');
